import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The compare-and-set of a projection's checkpoint as a function that raises (SQLSTATE HC409) when another
 * instance moved it, so the move can travel in the same message as the transaction's COMMIT: an error
 * ends that message before its COMMIT runs (projections/runner/checkpointed-transaction.ts).
 */
export class ProjectionCheckpointMove1767744000050 implements MigrationInterface {
  name = 'ProjectionCheckpointMove1767744000050';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION hcp_move_checkpoint(p_projection text, p_previous bigint, p_next bigint) RETURNS void
      LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO projection_checkpoints (name, position, updated_at) VALUES (p_projection, p_next, now())
        ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()
        WHERE projection_checkpoints.position = p_previous;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'checkpoint of % moved under us', p_projection USING ERRCODE = 'HC409';
        END IF;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION hcp_move_checkpoint(text, bigint, bigint)`);
  }
}
