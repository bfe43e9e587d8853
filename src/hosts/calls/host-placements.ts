import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HcpError } from '@hcp/domain';

export interface HostOfVm {
  host_id: string;
  cluster_id: string;
}

/**
 * Which host of an agent cluster holds each VM (host_vm_placements). A create takes its host once, in one
 * transaction that locks the chosen host's row, so concurrent creates share out a host's room exactly and
 * a retried create finds the host its first attempt took. Room is what the host reported free at its last
 * heartbeat, less the memory of VMs placed on it since.
 */
@Injectable()
export class HostPlacements {
  constructor(private readonly db: DataSource) {}

  async hostOf(hcpId: string): Promise<HostOfVm | null> {
    const rows: HostOfVm[] = await this.db.query(
      `SELECT host_id, cluster_id FROM host_vm_placements WHERE hcp_id = $1`,
      [hcpId],
    );
    return rows[0] ?? null;
  }

  /** The VM's host: the one it was placed on, else a live host of the cluster with room (taken now). */
  async place(
    hcpId: string,
    clusterId: string,
    size: { vcpus: number; ram_mb: number },
    heartbeatTimeoutMs: number,
  ): Promise<HostOfVm> {
    const existing = await this.hostOf(hcpId);
    if (existing) return existing;
    return this.db.transaction(async (tx) => {
      const candidates: Array<{ id: string; room_mb: number }> = await tx.query(
        `SELECT h.id,
                COALESCE((h.capacity->>'free_ram_mb')::bigint, 0)
                  - COALESCE((SELECT sum(p.ram_mb) FROM host_vm_placements p
                              WHERE p.host_id = h.id AND p.placed_at > h.last_heartbeat_at), 0) AS room_mb
         FROM hosts h
         WHERE h.cluster_id = $1 AND h.state = 'active'
           AND h.last_heartbeat_at > now() - make_interval(secs => $2::double precision / 1000)
         ORDER BY room_mb DESC, h.id
         FOR UPDATE OF h`,
        [clusterId, heartbeatTimeoutMs],
      );
      const host = candidates.find((c) => Number(c.room_mb) >= size.ram_mb);
      if (!host) {
        throw new HcpError(
          'PROVIDER_UNAVAILABLE',
          candidates.length === 0
            ? 'no host agent of this cluster is online'
            : `no online host of this cluster has ${size.ram_mb} MB of memory free`,
          { cluster_id: clusterId, online_hosts: candidates.length },
        );
      }
      const rows: HostOfVm[] = await tx.query(
        `INSERT INTO host_vm_placements (hcp_id, cluster_id, host_id, vcpus, ram_mb) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (hcp_id) DO UPDATE SET hcp_id = EXCLUDED.hcp_id
         RETURNING host_id, cluster_id`,
        [hcpId, clusterId, host.id, size.vcpus, size.ram_mb],
      );
      return rows[0]!;
    });
  }

  /** The VM is gone from its host: its room is free again. */
  async remove(hcpId: string): Promise<void> {
    await this.db.query(`DELETE FROM host_vm_placements WHERE hcp_id = $1`, [hcpId]);
  }

  /** The hosts a cluster listing must hear from: every online host, and every host holding a VM. */
  async hostsToList(clusterId: string, heartbeatTimeoutMs: number): Promise<Array<{ id: string; online: boolean }>> {
    const rows: Array<{ id: string; online: boolean }> = await this.db.query(
      `SELECT h.id, h.last_heartbeat_at > now() - make_interval(secs => $2::double precision / 1000) AS online
       FROM hosts h
       WHERE h.cluster_id = $1
         AND (h.state = 'active' OR EXISTS (SELECT 1 FROM host_vm_placements p WHERE p.host_id = h.id))
       ORDER BY h.id`,
      [clusterId, heartbeatTimeoutMs],
    );
    return rows;
  }

  async onlineHosts(clusterId: string, heartbeatTimeoutMs: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.db.query(
      `SELECT id FROM hosts WHERE cluster_id = $1 AND state = 'active'
         AND last_heartbeat_at > now() - make_interval(secs => $2::double precision / 1000)
       ORDER BY last_heartbeat_at DESC`,
      [clusterId, heartbeatTimeoutMs],
    );
    return rows.map((r) => r.id);
  }
}
