import { escapeLiteral, PoolClient } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { CheckpointMovedError } from './dead-letters';

/** A projection's checkpoint moving from `previous` to `next`: only if it is still at `previous`. */
export interface CheckpointMove {
  projection: string;
  previous: bigint;
  next: bigint;
}

/** What hcp_move_checkpoint raises when the checkpoint is not at `previous` (migration 1767744000050). */
const CHECKPOINT_MOVED = 'HC409';

/**
 * Runs `work` in one transaction with the move of a projection's checkpoint, so rows and position never
 * disagree. The move travels with the COMMIT, in one simple-protocol message (`SELECT
 * hcp_move_checkpoint(...); COMMIT`, values as literals): a live projection makes a transaction per
 * wake-up, and START, the move and COMMIT as three round trips of their own were half of the statements
 * of the process running the projections (bench/README.md, issue #21). The move is a compare-and-set: if
 * another instance moved the checkpoint (it held the lock while ours was lost), the function raises,
 * the message ends before its COMMIT, nothing of `work` is kept, and CheckpointMovedError tells the
 * runner to restart, so no event is applied twice.
 *
 * The move comes last on purpose: a transaction holds back every event-store reader from the moment it
 * writes (the reader stops below the oldest transaction in progress), so writing the checkpoint first
 * kept readers waiting through the whole of `work`.
 *
 * Its COMMIT waits for the WAL flush like any other. Committing without it (synchronous_commit off) saved
 * ~1 ms per transaction and lost no event, but a server crash then took back the last read-model rows
 * until the projections applied their events again: a client could read a VM running, then provisioning
 * (the embedded-restart test caught it). Reads must not go back in time.
 */
export async function inCheckpointedTransaction<T>(
  db: DataSource,
  move: CheckpointMove,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  const runner = db.createQueryRunner();
  try {
    const client = (await runner.connect()) as PoolClient;
    // Before the message goes out: whatever it leaves behind (an aborted transaction) is rolled back below.
    adoptTransaction(runner, true);
    await client.query('START TRANSACTION');
    const result = await work(runner.manager);
    await client.query(`${moveSql(move)}; COMMIT`).catch((err: unknown) => {
      throw checkpointMovedOr(err, move.projection);
    });
    adoptTransaction(runner, false);
    return result;
  } catch (err) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw err;
  } finally {
    await runner.release();
  }
}

/** CheckpointMovedError for the checkpoint function's refusal; any other error as it is. */
export function checkpointMovedOr(err: unknown, projection: string): unknown {
  return (err as { code?: string }).code === CHECKPOINT_MOVED ? new CheckpointMovedError(projection) : err;
}

function moveSql({ projection, previous, next }: CheckpointMove): string {
  return `SELECT hcp_move_checkpoint(${escapeLiteral(projection)}, ${previous}, ${next})`;
}

/**
 * Tells TypeORM that its connection is in a transaction it did not open (or end) itself, as its own
 * startTransaction and commitTransaction record it (they would send START TRANSACTION and COMMIT alone):
 * a repository call inside `work` then joins this transaction instead of opening one of its own, and
 * rollbackTransaction ends it. The integration suite (checkpointed-transaction.test.ts) fails if a TypeORM
 * release changes these fields.
 */
function adoptTransaction(runner: QueryRunner, open: boolean): void {
  const state = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
  state.isTransactionActive = open;
  state.transactionDepth = open ? 1 : 0;
}
