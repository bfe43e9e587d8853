import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Host agents: the hosts enrolled in agent clusters (libvirt), the one-time bootstrap tokens that enroll
 * them, and their credentials, kept as SHA-256 digests only (a leaked table authenticates nobody).
 */
export class Hosts1767744000040 implements MigrationInterface {
  name = 'Hosts1767744000040';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE hosts (
        id uuid PRIMARY KEY,
        cluster_id text NOT NULL,
        identity text NOT NULL,
        hostname text NOT NULL,
        state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'revoked')),
        credential_digest text,
        credential_rotated_at timestamptz,
        enrolled_at timestamptz NOT NULL DEFAULT now(),
        enrolled_with text,
        last_heartbeat_at timestamptz,
        capacity jsonb,
        capabilities jsonb,
        driver text,
        agent_version text,
        guests integer,
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (cluster_id, identity)
      )`);
    await q.query(
      `CREATE UNIQUE INDEX hosts_credential_digest ON hosts (credential_digest) WHERE credential_digest IS NOT NULL`,
    );
    await q.query(`CREATE INDEX hosts_cluster_heartbeat ON hosts (cluster_id, last_heartbeat_at)`);
    await q.query(`
      CREATE TABLE host_enrollments (
        id uuid PRIMARY KEY,
        cluster_id text NOT NULL,
        token_digest text NOT NULL UNIQUE,
        created_by text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        host_id uuid,
        identity text
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS host_enrollments`);
    await q.query(`DROP TABLE IF EXISTS hosts`);
  }
}
