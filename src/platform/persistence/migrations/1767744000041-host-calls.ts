import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Driver calls for host agents: HCP queues a call for a host, the host's agent claims it under a lease,
 * renews it and reports its outcome (the same lease discipline as job_queue). Calls about one VM
 * (`hcp_id`) are claimed one at a time, oldest first, so a call retried while its predecessor still runs
 * never races it on the host. `host_vm_placements` says which host holds each VM of an agent cluster,
 * taken atomically when its create first asks.
 */
export class HostCalls1767744000041 implements MigrationInterface {
  name = 'HostCalls1767744000041';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE host_calls (
        id uuid PRIMARY KEY,
        host_id uuid NOT NULL,
        hcp_id text,
        op text NOT NULL,
        request jsonb NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'claimed', 'succeeded', 'failed')),
        deadline timestamptz NOT NULL,
        claims integer NOT NULL DEFAULT 0,
        lease_expires_at timestamptz,
        outcome jsonb,
        trace_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX host_calls_open ON host_calls (host_id, created_at) WHERE status IN ('queued', 'claimed')`,
    );
    await q.query(
      `CREATE INDEX host_calls_finished ON host_calls (updated_at) WHERE status IN ('succeeded', 'failed')`,
    );
    await q.query(`
      CREATE TABLE host_vm_placements (
        hcp_id text PRIMARY KEY,
        cluster_id text NOT NULL,
        host_id uuid NOT NULL,
        vcpus integer NOT NULL,
        ram_mb integer NOT NULL,
        placed_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX host_vm_placements_host ON host_vm_placements (host_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS host_vm_placements`);
    await q.query(`DROP TABLE IF EXISTS host_calls`);
  }
}
