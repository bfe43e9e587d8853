import { randomUUID } from 'node:crypto';
import { CheckpointMovedError } from '../../../projections/runner/dead-letters';
import { BulkInsert, bulkInsertBatch } from '../../../projections/runner/bulk-insert';
import { inCheckpointedStatement } from '../../../projections/runner/checkpointed-statement';
import { OneStatementBatch } from '../../../projections/runner/projection';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';
import { projectionCheckpoints } from '../../support/projection-checkpoints';

describe('a projection batch sent as one statement with its checkpoint move (real PostgreSQL)', () => {
  let database: MigratedDatabase;

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_ckpt_stmt', 2);
  });

  afterAll(async () => {
    await database?.close();
  });

  const position = (name: string) => projectionCheckpoints(database.ds).position(name);
  const at = (name: string, value: number) => projectionCheckpoints(database.ds).at(name, value);
  /**
   * A batch that moves marker rows (other checkpoint rows, so the test needs no table of its own) from 1 to
   * 2, counting on `rows` of them, and tells how it settled.
   */
  const batchOf = (markers: string[], rows = markers.length) => {
    const settled: string[] = [];
    const batch: OneStatementBatch = {
      statements: [
        `UPDATE projection_checkpoints SET position = 2 WHERE name = ANY($1::text[]) AND position = 1 RETURNING name`,
      ],
      params: [markers],
      rows,
      committed: () => settled.push('committed'),
      refused: () => settled.push('refused'),
    };
    return { batch, settled };
  };

  it('commits the rows and the move together, and says so to the batch', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 4);
    const markers = [`m-${randomUUID()}`, `m-${randomUUID()}`];
    for (const m of markers) await at(m, 1);
    const { batch, settled } = batchOf(markers);

    await expect(
      inCheckpointedStatement(database.ds, { projection: name, previous: 4n, next: 9n }, batch),
    ).resolves.toBe(true);
    expect(await position(name)).toBe('9');
    expect(await Promise.all(markers.map(position))).toEqual(['2', '2']);
    expect(settled).toEqual(['committed']);
  });

  it('keeps nothing and moves nothing when the statement wrote fewer rows than the batch counted on', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 4);
    const written = `m-${randomUUID()}`;
    const movedOn = `m-${randomUUID()}`;
    await at(written, 1);
    await at(movedOn, 5); // another writer moved this row on: the guard leaves it
    const { batch, settled } = batchOf([written, movedOn]);

    await expect(
      inCheckpointedStatement(database.ds, { projection: name, previous: 4n, next: 9n }, batch),
    ).resolves.toBe(false);
    expect(await position(name)).toBe('4');
    expect(await position(written)).toBe('1');
    expect(await position(movedOn)).toBe('5');
    expect(settled).toEqual(['refused']);
  });

  it('counts the rows of every statement it joins: one that writes none refuses them all', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 4);
    const updated = `m-${randomUUID()}`;
    const present = `m-${randomUUID()}`;
    await at(updated, 1);
    await at(present, 7);
    const settled: string[] = [];
    const batch: OneStatementBatch = {
      statements: [
        `UPDATE projection_checkpoints SET position = 2 WHERE name = $1 AND position = 1 RETURNING name`,
        `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($2, 1, now()) ON CONFLICT (name) DO NOTHING RETURNING 1`,
      ],
      params: [updated, present],
      rows: 2,
      committed: () => settled.push('committed'),
      refused: () => settled.push('refused'),
    };

    await expect(
      inCheckpointedStatement(database.ds, { projection: name, previous: 4n, next: 9n }, batch),
    ).resolves.toBe(false);
    expect(await position(updated)).toBe('1');
    expect(await position(name)).toBe('4');
    expect(settled).toEqual(['refused']);

    const absent = `m-${randomUUID()}`;
    await expect(
      inCheckpointedStatement(
        database.ds,
        { projection: name, previous: 4n, next: 9n },
        { ...batch, params: [updated, absent] },
      ),
    ).resolves.toBe(true);
    expect(await Promise.all([position(updated), position(absent), position(name)])).toEqual(['2', '1', '9']);
  });

  it('refuses a move from where the checkpoint is not, keeps nothing of the rows, and tells the batch so', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 10);
    const marker = `m-${randomUUID()}`;
    await at(marker, 1);
    const { batch, settled } = batchOf([marker]);

    await expect(
      inCheckpointedStatement(database.ds, { projection: name, previous: 5n, next: 12n }, batch),
    ).rejects.toBeInstanceOf(CheckpointMovedError);
    expect(await position(name)).toBe('10');
    expect(await position(marker)).toBe('1');
    expect(settled).toEqual(['refused']);
  });

  it('makes the first move of a projection that has no checkpoint yet', async () => {
    const name = `p-${randomUUID()}`;
    const marker = `m-${randomUUID()}`;
    await at(marker, 1);
    const { batch } = batchOf([marker]);

    await expect(
      inCheckpointedStatement(database.ds, { projection: name, previous: -1n, next: 3n }, batch),
    ).resolves.toBe(true);
    expect(await position(name)).toBe('3');
  });

  it('moves the checkpoint alone for a batch with nothing to write', async () => {
    const name = `p-${randomUUID()}`;
    await at(name, 4);
    await expect(
      inCheckpointedStatement(database.ds, { projection: name, previous: 4n, next: 9n }, bulkInsertBatch([])),
    ).resolves.toBe(true);
    expect(await position(name)).toBe('9');
  });

  describe('inserts into several tables as one batch', () => {
    // Rows of the checkpoint table stand in for two tables; the second insert names its columns otherwise.
    const checkpoints = new BulkInsert({
      name: 'projection_checkpoints',
      columns: { name: 'text', position: 'bigint', updated_at: 'timestamptz' },
      key: ['name'],
      onConflict: 'nothing',
    });
    const row = (name: string, position: number) => ({ name, position, updated_at: new Date().toISOString() });

    it('writes every row of every table with the move, their parameters numbered in order', async () => {
      const name = `p-${randomUUID()}`;
      await at(name, 4);
      const [a, b, c] = [`m-${randomUUID()}`, `m-${randomUUID()}`, `m-${randomUUID()}`];
      const batch = bulkInsertBatch([
        [checkpoints, [row(a, 11), row(b, 12)]],
        [checkpoints, []],
        [checkpoints, [row(c, 13)]],
      ]);
      expect(batch.statements).toHaveLength(2);
      expect(batch.rows).toBe(3);

      await expect(
        inCheckpointedStatement(database.ds, { projection: name, previous: 4n, next: 9n }, batch),
      ).resolves.toBe(true);
      expect(await Promise.all([position(a), position(b), position(c), position(name)])).toEqual([
        '11',
        '12',
        '13',
        '9',
      ]);
    });

    it('refuses the batch, keeping nothing, when one of its rows is already there', async () => {
      const name = `p-${randomUUID()}`;
      await at(name, 4);
      const [fresh, present] = [`m-${randomUUID()}`, `m-${randomUUID()}`];
      await at(present, 1);
      const batch = bulkInsertBatch([
        [checkpoints, [row(fresh, 11)]],
        [checkpoints, [row(present, 12)]],
      ]);

      await expect(
        inCheckpointedStatement(database.ds, { projection: name, previous: 4n, next: 9n }, batch),
      ).resolves.toBe(false);
      expect(await Promise.all([position(fresh), position(present), position(name)])).toEqual([null, '1', '4']);
    });
  });
});
