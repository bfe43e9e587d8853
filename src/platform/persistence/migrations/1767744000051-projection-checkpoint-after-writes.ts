import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The checkpoint's move for a batch written as one statement (projections/runner/checkpointed-statement.ts):
 * it moves only if the statement wrote every row the projection meant to write, and raises HC412 otherwise,
 * which rolls the statement back whole; HC409 (another instance moved it) as hcp_move_checkpoint.
 */
export class ProjectionCheckpointAfterWrites1767744000051 implements MigrationInterface {
  name = 'ProjectionCheckpointAfterWrites1767744000051';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION hcp_move_checkpoint_after_writes(
        p_projection text, p_previous bigint, p_next bigint, p_written bigint, p_expected bigint
      ) RETURNS void
      LANGUAGE plpgsql AS $$
      BEGIN
        IF p_written IS DISTINCT FROM p_expected THEN
          RAISE EXCEPTION '% wrote % of % rows', p_projection, p_written, p_expected USING ERRCODE = 'HC412';
        END IF;
        PERFORM hcp_move_checkpoint(p_projection, p_previous, p_next);
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION hcp_move_checkpoint_after_writes(text, bigint, bigint, bigint, bigint)`);
  }
}
