import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The ops plane: providers, clusters, zones, images and flavors become event-sourced aggregates read
 * through one projection table; provider credentials (sealed) and health live beside them; placement
 * reads per-cluster usage kept by a projection. Replaces release 0.1's seeded catalog tables.
 */
export class OpsPlane1767484800000 implements MigrationInterface {
  name = 'OpsPlane1767484800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS zones`);
    await q.query(`DROP TABLE IF EXISTS images`);
    await q.query(`DROP TABLE IF EXISTS flavors`);
    await q.query(`
      CREATE TABLE ops_resources (
        kind text NOT NULL CHECK (kind IN ('provider', 'cluster', 'zone', 'image', 'flavor')),
        id text NOT NULL,
        name text NOT NULL,
        spec jsonb NOT NULL,
        deleted boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        position bigint NOT NULL,
        PRIMARY KEY (kind, id)
      )`);
    // Not unique: commands refuse duplicate names; a projection must never fail on what the log holds.
    await q.query(`CREATE INDEX ops_resources_live_name ON ops_resources (kind, name) WHERE NOT deleted`);
    await q.query(`
      CREATE TABLE provider_credentials (
        provider_id text PRIMARY KEY,
        sealed jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE provider_health (
        provider_id text PRIMARY KEY,
        status text NOT NULL CHECK (status IN ('healthy', 'unreachable', 'unknown')),
        message text,
        checked_at timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE TABLE cluster_allocations (
        vm_id uuid PRIMARY KEY,
        cluster_id text NOT NULL,
        vcpus int NOT NULL,
        ram_mb int NOT NULL,
        disk_gb int NOT NULL
      )`);
    await q.query(`
      CREATE TABLE cluster_usage (
        cluster_id text PRIMARY KEY,
        instances int NOT NULL,
        vcpus int NOT NULL,
        ram_mb bigint NOT NULL,
        disk_gb bigint NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'cluster_usage',
      'cluster_allocations',
      'provider_health',
      'provider_credentials',
      'ops_resources',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
    await q.query(`
      CREATE TABLE zones (
        id text PRIMARY KEY, name text NOT NULL, provider_id text NOT NULL, provider_type text NOT NULL,
        cluster_id text NOT NULL, capabilities jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`
      CREATE TABLE images (
        id uuid PRIMARY KEY, name text NOT NULL UNIQUE, os text NOT NULL, min_disk_gb int NOT NULL, min_ram_mb int NOT NULL,
        visibility text NOT NULL CHECK (visibility IN ('public', 'private')), provider_refs jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`
      CREATE TABLE flavors (
        id uuid PRIMARY KEY, name text NOT NULL UNIQUE, vcpus int NOT NULL CHECK (vcpus > 0), ram_mb int NOT NULL CHECK (ram_mb > 0),
        disk_gb int NOT NULL CHECK (disk_gb > 0), extras jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL DEFAULT now())`);
  }
}
