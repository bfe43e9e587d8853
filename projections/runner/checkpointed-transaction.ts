import { escapeLiteral, PoolClient } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { CheckpointMovedError } from './dead-letters';

/** A projection's checkpoint moving from `previous` to `next`: only if it is still at `previous`. */
export interface CheckpointMove {
  projection: string;
  previous: bigint;
  next: bigint;
}

/**
 * Runs `work` in one transaction with the move of a projection's checkpoint, so rows and position never
 * disagree. The transaction opens with the move, in the same round trip as its START (one simple-protocol
 * message, the values as literals): a live projection makes a transaction per wake-up,
 * and START, the move and COMMIT as three round trips were half of the statements of the process running
 * the projections (bench/README.md, issue #21).
 *
 * Its COMMIT does not wait for the WAL flush (synchronous_commit off for this transaction only): every
 * row it writes is derived from events that are durable already, and the checkpoint is in the same
 * transaction, so a server crash can only lose rows together with the checkpoint that covers them, and the
 * projection applies those events again. A flush per projection transaction (~1 ms each on this
 * machine's disk, a dozen per job) was on the path of every read-after-write. Its external effects
 * (a publication, a job queue row) are idempotent already, as for any batch replayed after a crash.
 *
 * The move is a compare-and-set: if another instance moved the checkpoint (it held the lock while ours was
 * lost), CheckpointMovedError ends the transaction before `work` runs, so no event is applied twice. Moving
 * it first also holds the checkpoint's row lock for the whole transaction, which changes nothing: only the
 * projection's active instance writes that row.
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
    adoptTransaction(runner);
    const [, , moved] = (await client.query(
      `START TRANSACTION; SET LOCAL synchronous_commit TO off; ${moveSql(move)}`,
    )) as unknown as [unknown, unknown, { rowCount: number | null }];
    if (moved.rowCount !== 1) throw new CheckpointMovedError(move.projection);
    const result = await work(runner.manager);
    await runner.commitTransaction();
    return result;
  } catch (err) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw err;
  } finally {
    await runner.release();
  }
}

function moveSql({ projection, previous, next }: CheckpointMove): string {
  return `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES (${escapeLiteral(projection)}, ${next}, now())
    ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()
    WHERE projection_checkpoints.position = ${previous}
    RETURNING name`;
}

/**
 * Tells TypeORM that its connection is in a transaction it did not open itself, as its own startTransaction
 * records it (it would send START TRANSACTION alone): a repository call inside `work` then joins this
 * transaction instead of opening one of its own, and commitTransaction / rollbackTransaction end it. The
 * integration suite (checkpointed-transaction.test.ts) fails if a TypeORM release changes these fields.
 */
function adoptTransaction(runner: QueryRunner): void {
  const state = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
  state.isTransactionActive = true;
  state.transactionDepth = 1;
}
