import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit trail's and the metering records' read models, and what each keeps to describe later events
 * (a job's project and actor; a VM's project, zone and resources).
 */
export class AuditAndMetering1767571200000 implements MigrationInterface {
  name = 'AuditAndMetering1767571200000';

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
    await q.query(`
      CREATE TABLE metering_records (
        event_id text PRIMARY KEY,
        kind text NOT NULL,
        project_id text NOT NULL,
        vm_id uuid NOT NULL,
        zone text NOT NULL,
        flavor_id text NOT NULL,
        resources jsonb NOT NULL,
        effective_at timestamptz NOT NULL,
        position bigint NOT NULL
      )`);
    await q.query(`CREATE INDEX metering_records_project_time ON metering_records (project_id, effective_at)`);
    await q.query(`CREATE INDEX metering_records_position ON metering_records (position)`);
    await q.query(`
      CREATE TABLE metering_vms (
        vm_id uuid PRIMARY KEY,
        project_id text NOT NULL,
        zone text NOT NULL,
        flavor_id text NOT NULL,
        resources jsonb NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS metering_vms`);
    await q.query(`DROP TABLE IF EXISTS metering_records`);
    await q.query(`DELETE FROM projection_checkpoints WHERE name = 'metering'`);
    await q.query(`DROP TABLE IF EXISTS audit_jobs`);
    await q.query(`DROP TABLE IF EXISTS audit_log`);
    await q.query(`DELETE FROM projection_checkpoints WHERE name = 'audit'`);
  }
}
