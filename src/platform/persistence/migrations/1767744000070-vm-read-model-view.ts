import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The tenant's view of each VM as JSON text in its read-model row (`view`), written by the projection,
 * so that a detail read or a list page sends what it reads instead of PostgreSQL building the JSON per
 * row and per read. The rows already projected get the view built from their columns here; the
 * projection writes it from then on.
 */
export class VmReadModelView1767744000070 implements MigrationInterface {
  name = 'VmReadModelView1767744000070';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE vm_read_model ADD COLUMN view text`);
    // The fields of the view as this release defines them, in their order; frozen here, as a migration is.
    await q.query(`
      UPDATE vm_read_model SET view = json_build_object(
        'id', id, 'project_id', project_id, 'name', name, 'zone', zone, 'image_id', image_id,
        'flavor_id', flavor_id, 'status', status, 'desired_state', desired_state, 'addresses', addresses,
        'tags', tags, 'metadata', metadata, 'created_at', state->'created_at', 'updated_at', state->'updated_at',
        'last_job_id', last_job_id)::text`);
    await q.query(`ALTER TABLE vm_read_model ALTER COLUMN view SET NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Rebuilt rather than altered, so that the column's place is free again (DROP COLUMN keeps it, and
    // `up` would then add the view one place further on).
    await q.query(`
      CREATE TABLE vm_read_model_down (
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
    await q.query(`
      INSERT INTO vm_read_model_down
      SELECT id, project_id, name, zone, image_id, flavor_id, status, desired_state, addresses, tags, metadata,
             last_job_id, created_at, updated_at, state, position
      FROM vm_read_model`);
    await q.query(`DROP TABLE vm_read_model`);
    await q.query(`ALTER TABLE vm_read_model_down RENAME TO vm_read_model`);
    await q.query(`ALTER TABLE vm_read_model RENAME CONSTRAINT vm_read_model_down_pkey TO vm_read_model_pkey`);
    await q.query(`CREATE INDEX vm_read_model_project_page ON vm_read_model (project_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX vm_read_model_project_name ON vm_read_model (project_id, name)`);
    await q.query(`CREATE INDEX vm_read_model_tags ON vm_read_model USING gin (tags jsonb_path_ops)`);
  }
}
