import { randomUUID } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { ProjectionCheckpoint } from '@hcp/projections';
import { CheckpointMovedError } from '../../../projections/runner/dead-letters';
import { inCheckpointedTransaction } from '../../../projections/runner/checkpointed-transaction';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';
import { projectionCheckpoints } from '../../support/projection-checkpoints';

describe('a projection transaction opened with its checkpoint move (real PostgreSQL)', () => {
  let database: MigratedDatabase;

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_ckpt_tx', 2);
  });

  afterAll(async () => {
    await database?.close();
  });

  const position = (name: string) => projectionCheckpoints(database.ds).position(name);
  const at = (name: string, value: number) => projectionCheckpoints(database.ds).at(name, value);
  /** A row written by the work: another checkpoint row, so the test needs no table of its own. */
  const marker = () => `marker-${randomUUID()}`;
  const writeMarker = (tx: EntityManager, name: string) =>
    tx.query(`INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, 1, now())`, [name]);
  /** The transactions left open on the database: a connection given back mid-transaction would show here. */
  const openTransactions = async (): Promise<number> =>
    Number(
      (
        await database.ds.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
        )
      )[0].n,
    );

  it('commits the work and the move together, a first move included', async () => {
    const name = `p-${randomUUID()}`;
    const written = marker();
    const result = await inCheckpointedTransaction(
      database.ds,
      { projection: name, previous: -1n, next: 7n },
      async (tx) => {
        await writeMarker(tx, written);
        return 'applied';
      },
    );

    expect(result).toBe('applied');
    expect(await position(name)).toBe('7');
    expect(await position(written)).toBe('1');
  });

  it('refuses a move from where the checkpoint is not, and keeps nothing of the work', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 10);
    const written = marker();

    await expect(
      inCheckpointedTransaction(database.ds, { projection: name, previous: 5n, next: 12n }, async (tx) => {
        await writeMarker(tx, written);
      }),
    ).rejects.toBeInstanceOf(CheckpointMovedError);
    expect(await position(name)).toBe('10');
    expect(await position(written)).toBeNull();
    expect(await openTransactions()).toBe(0);
  });

  it('leaves neither the rows nor the move when the work fails', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 3);
    const written = marker();

    await expect(
      inCheckpointedTransaction(database.ds, { projection: name, previous: 3n, next: 4n }, async (tx) => {
        await writeMarker(tx, written);
        throw new Error('the projection failed');
      }),
    ).rejects.toThrow('the projection failed');
    expect(await position(name)).toBe('3');
    expect(await position(written)).toBeNull();
    expect(await openTransactions()).toBe(0);
  });

  it('makes a repository write inside the work join its transaction, not commit one of its own', async () => {
    const name = `p-${randomUUID()}`;
    const written = marker();

    await expect(
      inCheckpointedTransaction(database.ds, { projection: name, previous: -1n, next: 1n }, async (tx) => {
        // `save` opens (and commits) a transaction of its own unless TypeORM knows one is open.
        await tx.getRepository(ProjectionCheckpoint).save({ name: written, position: '1', updated_at: new Date() });
        throw new Error('the projection failed after its write');
      }),
    ).rejects.toThrow('after its write');
    expect(await position(written)).toBeNull();
    expect(await position(name)).toBeNull();
    expect(await openTransactions()).toBe(0);
  });

  it('takes no transaction id before the work writes, so it holds back no event-store reader until then', async () => {
    const name = `p-${randomUUID()}`;
    const before = await inCheckpointedTransaction(
      database.ds,
      { projection: name, previous: -1n, next: 1n },
      async (tx) => (await tx.query(`SELECT pg_current_xact_id_if_assigned()::text AS x`))[0].x,
    );
    expect(before).toBeNull();
    expect(await position(name)).toBe('1');
  });

  it('quotes the projection name in the move', async () => {
    const name = `o'brien; DROP TABLE projection_checkpoints; -- ${randomUUID()}`;
    await inCheckpointedTransaction(database.ds, { projection: name, previous: -1n, next: 2n }, async () => undefined);
    expect(await position(name)).toBe('2');
  });
});
