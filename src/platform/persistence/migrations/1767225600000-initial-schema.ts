import { MigrationInterface, QueryRunner } from 'typeorm';
import { dropPostgresEventStoreSchema, installPostgresEventStoreTable } from '@hcp/eventstore';
import { dropSimulatorSchema, installSimulatorSchema } from '@hcp/providers';

/**
 * Release 0.1 schema: the PostgreSQL event store, the job queue, the VM and job read models with their
 * checkpoints, the catalog, and the simulator provider's own state.
 */
export class InitialSchema1767225600000 implements MigrationInterface {
  name = 'InitialSchema1767225600000';

  async up(q: QueryRunner): Promise<void> {
    await installPostgresEventStoreTable(q);
    await installSimulatorSchema(q);
    await q.query(`
      CREATE TABLE job_queue (
        job_id uuid PRIMARY KEY,
        project_id text NOT NULL,
        type text NOT NULL,
        resource_id uuid NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'leased', 'done')),
        available_at timestamptz NOT NULL,
        lease_owner text,
        lease_expires_at timestamptz,
        leases int NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    // Only unfinished jobs are ever scanned by workers, so the index skips the done ones.
    await q.query(`CREATE INDEX job_queue_due ON job_queue (available_at) WHERE status <> 'done'`);

    await q.query(`
      CREATE TABLE projection_checkpoints (
        name text PRIMARY KEY,
        position bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE vm_read_model (
        id uuid PRIMARY KEY,
        project_id text NOT NULL,
        name text NOT NULL,
        zone text NOT NULL,
        image_id text NOT NULL,
        flavor_id text NOT NULL,
        status text NOT NULL,
        desired_state text NOT NULL,
        addresses jsonb NOT NULL,
        tags jsonb NOT NULL,
        metadata jsonb NOT NULL,
        last_job_id uuid NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        state jsonb NOT NULL,
        position bigint NOT NULL
      )`);
    await q.query(`CREATE INDEX vm_read_model_project_page ON vm_read_model (project_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX vm_read_model_project_name ON vm_read_model (project_id, name)`);
    await q.query(`CREATE INDEX vm_read_model_tags ON vm_read_model USING gin (tags jsonb_path_ops)`);

    await q.query(`
      CREATE TABLE job_read_model (
        id uuid PRIMARY KEY,
        project_id text NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        resource_id uuid NOT NULL,
        attempts int NOT NULL,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        finished_at timestamptz,
        error jsonb,
        trace_id text NOT NULL,
        state jsonb NOT NULL,
        position bigint NOT NULL
      )`);
    await q.query(`CREATE INDEX job_read_model_project_page ON job_read_model (project_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX job_read_model_resource ON job_read_model (project_id, resource_id)`);

    await q.query(`
      CREATE TABLE zones (
        id text PRIMARY KEY,
        name text NOT NULL,
        provider_id text NOT NULL,
        provider_type text NOT NULL,
        cluster_id text NOT NULL,
        capabilities jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE images (
        id uuid PRIMARY KEY,
        name text NOT NULL UNIQUE,
        os text NOT NULL,
        min_disk_gb int NOT NULL,
        min_ram_mb int NOT NULL,
        visibility text NOT NULL CHECK (visibility IN ('public', 'private')),
        provider_refs jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE flavors (
        id uuid PRIMARY KEY,
        name text NOT NULL UNIQUE,
        vcpus int NOT NULL CHECK (vcpus > 0),
        ram_mb int NOT NULL CHECK (ram_mb > 0),
        disk_gb int NOT NULL CHECK (disk_gb > 0),
        extras jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'flavors',
      'images',
      'zones',
      'job_read_model',
      'vm_read_model',
      'projection_checkpoints',
      'job_queue',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
    await dropSimulatorSchema(q);
    await dropPostgresEventStoreSchema(q);
  }
}
