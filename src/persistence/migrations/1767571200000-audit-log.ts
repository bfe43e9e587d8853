import { MigrationInterface, QueryRunner } from 'typeorm';

/** The audit trail's read model, and what it keeps of each job to describe the job's events. */
export class AuditLog1767571200000 implements MigrationInterface {
  name = 'AuditLog1767571200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_log (
        id uuid PRIMARY KEY,
        created_at timestamptz NOT NULL,
        actor text,
        action text NOT NULL,
        target jsonb NOT NULL,
        project_id text,
        result text NOT NULL,
        trace_id text,
        details jsonb NOT NULL,
        position bigint NOT NULL
      )`);
    await q.query(`CREATE INDEX audit_log_time ON audit_log (created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX audit_log_project_time ON audit_log (project_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX audit_log_actor_time ON audit_log (actor, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE audit_jobs (
        job_id uuid PRIMARY KEY,
        project_id text NOT NULL,
        type text NOT NULL,
        resource_id uuid NOT NULL,
        actor text NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS audit_jobs`);
    await q.query(`DROP TABLE IF EXISTS audit_log`);
    await q.query(`DELETE FROM projection_checkpoints WHERE name = 'audit'`);
  }
}
