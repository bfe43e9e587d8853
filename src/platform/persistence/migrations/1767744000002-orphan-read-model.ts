import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The orphans ops see (`GET /v1/ops/orphans`): provider resources that carry an HCP id without a live VM,
 * folded from their streams. Listed newest first, filtered by cluster or provider and status.
 */
export class OrphanReadModel1767744000002 implements MigrationInterface {
  name = 'OrphanReadModel1767744000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE orphan_read_model (
        id uuid PRIMARY KEY,
        provider_id text NOT NULL,
        cluster_id text NOT NULL,
        hcp_id text NOT NULL,
        status text NOT NULL,
        hcp_record text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        state jsonb NOT NULL,
        position bigint NOT NULL
      )`);
    await q.query(`CREATE INDEX orphan_read_model_page ON orphan_read_model (created_at, id)`);
    await q.query(`CREATE INDEX orphan_read_model_cluster_status ON orphan_read_model (cluster_id, status)`);
    await q.query(`CREATE INDEX orphan_read_model_provider_status ON orphan_read_model (provider_id, status)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS orphan_read_model`);
  }
}
