import { DataSource } from 'typeorm';
import { CheckpointMove, checkpointMovedOr } from './checkpointed-transaction';
import { OneStatementBatch } from './projection';

/** What hcp_move_checkpoint_after_writes raises when the statement wrote fewer rows than counted on (migration 1767744000051). */
const ROWS_CHANGED = 'HC412';

/**
 * Sends a batch that is one statement together with the checkpoint's move, as one statement: one round
 * trip and one implicit transaction, where a checkpointed transaction takes three (START, the work, the
 * move with COMMIT). The move runs after the batch's writes (it counts their rows) and raises when
 * they are fewer than the batch counted on (a row someone else wrote since), which rolls back the whole
 * statement: answers false, and the batch goes through a transaction instead. A checkpoint another
 * instance moved raises CheckpointMovedError, as in a transaction.
 */
export async function inCheckpointedStatement(
  db: DataSource,
  { projection, previous, next }: CheckpointMove,
  batch: OneStatementBatch,
): Promise<boolean> {
  const n = batch.params.length;
  // A batch with nothing to write (events the projection records nothing for) only moves the checkpoint.
  const written = batch.statements.map((statement, i) => `written_${i} AS (${statement})`);
  const sql =
    (written.length ? `WITH ${written.join(', ')} ` : '') +
    `SELECT hcp_move_checkpoint_after_writes($${n + 1}, $${n + 2}::bigint, $${n + 3}::bigint, ` +
    `${batch.statements.map((_, i) => `(SELECT count(*) FROM written_${i})`).join(' + ') || '0'}, $${n + 4}::bigint)`;
  try {
    await db.query(sql, [...batch.params, projection, previous.toString(), next.toString(), batch.rows]);
  } catch (err) {
    // Whatever the failure, nothing of the batch is known to be kept.
    batch.refused();
    if ((err as { code?: string }).code !== ROWS_CHANGED) throw checkpointMovedOr(err, projection);
    return false;
  }
  batch.committed();
  return true;
}
