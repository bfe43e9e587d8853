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
    await q.query(`ALTER TABLE vm_read_model DROP COLUMN view`);
  }
}
