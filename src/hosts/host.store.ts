import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import type { Heartbeat, HostCapacity, HostPrincipal } from '@hcp/host-protocol';
import { queryReturning } from '../platform/persistence/returning';

export type HostState = 'active' | 'revoked';

/** A row of `hosts` as ops and placement read it (never its credential digest). */
export interface HostRecord {
  id: string;
  cluster_id: string;
  identity: string;
  hostname: string;
  state: HostState;
  /** `static` for hosts configured in HCP_STATIC_HOST_CREDENTIALS, else the enrollment that made it. */
  enrolled_with: string | null;
  enrolled_at: Date;
  credential_rotated_at: Date | null;
  last_heartbeat_at: Date | null;
  capacity: HostCapacity | null;
  capabilities: Record<string, unknown> | null;
  driver: string | null;
  agent_version: string | null;
  guests: number | null;
}

/** What `enrolled_with` holds for a host whose credential is configured, not issued by HCP. */
export const STATIC_ENROLLMENT = 'static';

const COLUMNS = `id, cluster_id, identity, hostname, state, enrolled_with, enrolled_at, credential_rotated_at,
  last_heartbeat_at, capacity, capabilities, driver, agent_version, guests`;

/**
 * The `hosts` table: every credential check is one lookup by digest on its unique index, so what ops do
 * (revoke, rotate) takes effect on the next request in every HCP process, with nothing cached.
 */
@Injectable()
export class HostStore {
  constructor(private readonly db: DataSource) {}

  /** Who presents this digest, if an active host does; a revoked host's digest authenticates nobody. */
  async principalOf(digest: string): Promise<(HostPrincipal & { state: HostState }) | null> {
    const rows: Array<{ id: string; cluster_id: string; identity: string; state: HostState }> = await this.db.query(
      `SELECT id, cluster_id, identity, state FROM hosts WHERE credential_digest = $1`,
      [digest],
    );
    const row = rows[0];
    return row ? { host_id: row.id, cluster_id: row.cluster_id, identity: row.identity, state: row.state } : null;
  }

  /**
   * The row of a configured (static) host, made on its first authenticated request. A configured digest
   * changed for the same host replaces the old one, unless ops revoked the host: revoked stays revoked.
   */
  async ensureStatic(clusterId: string, identity: string, digest: string): Promise<void> {
    await this.db.query(
      `INSERT INTO hosts (id, cluster_id, identity, hostname, credential_digest, enrolled_with)
       VALUES ($1, $2, $3, $3, $4, $5)
       ON CONFLICT (cluster_id, identity) DO UPDATE
         SET credential_digest = EXCLUDED.credential_digest, credential_rotated_at = now(), updated_at = now()
         WHERE hosts.enrolled_with = $5 AND hosts.state = 'active' AND hosts.credential_digest IS DISTINCT FROM EXCLUDED.credential_digest`,
      [randomUUID(), clusterId, identity, digest, STATIC_ENROLLMENT],
    );
  }

  /**
   * Enrolls `identity` in the cluster with a new credential: the same host (same id) when it was enrolled
   * before (a retried enrollment, a reinstalled machine), active again with only the new credential.
   */
  async enroll(
    tx: EntityManager,
    host: { cluster_id: string; identity: string; hostname: string; agent_version: string | null },
    enrollmentId: string,
    digest: string,
  ): Promise<{ id: string; created: boolean }> {
    const rows: Array<{ id: string; created: boolean }> = await tx.query(
      `INSERT INTO hosts (id, cluster_id, identity, hostname, agent_version, credential_digest, enrolled_with)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (cluster_id, identity) DO UPDATE
         SET hostname = EXCLUDED.hostname, agent_version = COALESCE(EXCLUDED.agent_version, hosts.agent_version),
             credential_digest = EXCLUDED.credential_digest, credential_rotated_at = now(),
             enrolled_with = EXCLUDED.enrolled_with, state = 'active', updated_at = now()
       RETURNING id, (xmax = 0) AS created`,
      [randomUUID(), host.cluster_id, host.identity, host.hostname, host.agent_version, digest, enrollmentId],
    );
    return rows[0]!;
  }

  async recordHeartbeat(hostId: string, beat: Heartbeat): Promise<boolean> {
    const rows = await queryReturning(
      this.db,
      `UPDATE hosts SET last_heartbeat_at = now(), capacity = $2, capabilities = $3, driver = $4,
         agent_version = COALESCE($5, agent_version), guests = COALESCE($6, guests), updated_at = now()
       WHERE id = $1 AND state = 'active' RETURNING id`,
      [
        hostId,
        JSON.stringify(beat.capacity),
        JSON.stringify(beat.capabilities),
        beat.driver,
        beat.agent_version ?? null,
        beat.guests ?? null,
      ],
    );
    return rows.length === 1;
  }

  async find(id: string): Promise<HostRecord | null> {
    const rows: HostRecord[] = await this.db.query(`SELECT ${COLUMNS} FROM hosts WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  async list(clusterId?: string): Promise<HostRecord[]> {
    return clusterId === undefined
      ? this.db.query(`SELECT ${COLUMNS} FROM hosts ORDER BY cluster_id, hostname, id`)
      : this.db.query(`SELECT ${COLUMNS} FROM hosts WHERE cluster_id = $1 ORDER BY hostname, id`, [clusterId]);
  }

  /** Active hosts of the cluster whose last heartbeat is younger than `timeoutMs`, with their capacity. */
  async live(clusterId: string, timeoutMs: number): Promise<HostRecord[]> {
    return this.db.query(
      `SELECT ${COLUMNS} FROM hosts
       WHERE cluster_id = $1 AND state = 'active' AND capacity IS NOT NULL
         AND last_heartbeat_at > now() - make_interval(secs => $2::double precision / 1000)
       ORDER BY id`,
      [clusterId, timeoutMs],
    );
  }

  /** Revoked at once: the next request with its credential is refused, in every process. */
  async revoke(id: string): Promise<boolean> {
    const rows = await queryReturning(
      this.db,
      `UPDATE hosts SET state = 'revoked', updated_at = now() WHERE id = $1 AND state = 'active' RETURNING id`,
      [id],
    );
    return rows.length === 1;
  }

  /** A new credential for an active host enrolled by HCP; the old digest is gone with the update. */
  async rotate(id: string, digest: string): Promise<boolean> {
    const rows = await queryReturning(
      this.db,
      `UPDATE hosts SET credential_digest = $2, credential_rotated_at = now(), updated_at = now()
       WHERE id = $1 AND state = 'active' AND enrolled_with IS DISTINCT FROM $3 RETURNING id`,
      [id, digest, STATIC_ENROLLMENT],
    );
    return rows.length === 1;
  }

  /** Hosts by state and whether they are online, for the gauge. */
  async census(timeoutMs: number): Promise<Array<{ state: HostState; online: boolean; count: number }>> {
    const rows: Array<{ state: HostState; online: boolean; count: string }> = await this.db.query(
      `SELECT state, COALESCE(last_heartbeat_at > now() - make_interval(secs => $1::double precision / 1000), false) AS online,
              count(*) AS count
       FROM hosts GROUP BY 1, 2`,
      [timeoutMs],
    );
    return rows.map((r) => ({ state: r.state, online: r.online, count: Number(r.count) }));
  }
}
