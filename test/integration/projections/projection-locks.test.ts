import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { ProjectionLocks } from '@hcp/projections';
import { createDataSource } from '../../../src/platform/persistence/data-source';
import { eventually } from '../../support/api-client';
import { createTestDatabase, TestDatabase } from '../../support/test-database';

/** The projections' advisory locks of one process, all on one session (real PostgreSQL). */
describe('ProjectionLocks', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let other: Client;
  const opened: ProjectionLocks[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('hcp_proj_locks');
    ds = createDataSource(db.url, { poolSize: 3 });
    await ds.initialize();
    other = new Client({ connectionString: db.url });
    other.on('error', () => undefined);
    await other.connect();
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((l) => l.close()));
    await other.query('SELECT pg_advisory_unlock_all()');
  });

  afterAll(async () => {
    await other?.end();
    await ds?.destroy();
    await db?.drop();
  });

  const locks = () => {
    const l = new ProjectionLocks(ds);
    opened.push(l);
    return l;
  };
  const key = () => `hcp-projection:test-${randomUUID().slice(0, 8)}`;
  const ignoreLoss = () => undefined;
  /** The backends holding an advisory lock on `keys` (one row per lock). */
  const holders = async (keys: string[]): Promise<number[]> =>
    (
      await other.query(
        `SELECT l.pid FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted
           AND l.objid = ANY (SELECT (hashtext(k)::bigint & 4294967295)::oid FROM unnest($1::text[]) AS k)`,
        [keys],
      )
    ).rows.map((r: { pid: number }) => r.pid);
  const pool = () => (ds.driver as unknown as { master: { totalCount: number; idleCount: number } }).master;

  it('holds the locks of more projections than the pool has connections, on one session', async () => {
    const shared = locks();
    const keys = Array.from({ length: 11 }, key);
    const held = await Promise.all(keys.map((k) => shared.tryAcquire(k, ignoreLoss)));
    expect(held.every((l) => l !== null)).toBe(true);
    const pids = await holders(keys);
    expect(pids).toHaveLength(11);
    expect(new Set(pids).size).toBe(1);
    // Two of the three connections are still free for the projections' work.
    expect(pool().totalCount - pool().idleCount).toBe(1);
  });

  it('refuses a key another session holds, and grants it once that session lets go', async () => {
    const k = key();
    await other.query('SELECT pg_advisory_lock(hashtext($1))', [k]);
    const shared = locks();
    expect(await shared.tryAcquire(k, ignoreLoss)).toBeNull();
    await other.query('SELECT pg_advisory_unlock(hashtext($1))', [k]);
    expect(await shared.tryAcquire(k, ignoreLoss)).not.toBeNull();
  });

  it('refuses a key held here already, though the session’s locks are re-entrant, and grants it after release', async () => {
    const shared = locks();
    const k = key();
    const [first, second] = await Promise.all([shared.tryAcquire(k, ignoreLoss), shared.tryAcquire(k, ignoreLoss)]);
    expect([first, second].filter((l) => l !== null)).toHaveLength(1);
    await (first ?? second)!.release();
    expect(await holders([k])).toEqual([]);
    expect(await shared.tryAcquire(k, ignoreLoss)).not.toBeNull();
  });

  it('gives a released key to another process at once', async () => {
    const shared = locks();
    const k = key();
    const lock = await shared.tryAcquire(k, ignoreLoss);
    await shared.tryAcquire(key(), ignoreLoss);
    expect((await other.query('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [k])).rows).toEqual([{ ok: false }]);
    await lock!.release();
    expect((await other.query('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [k])).rows).toEqual([{ ok: true }]);
  });

  it('tells every holder when its session is terminated, and the next acquire opens a new session', async () => {
    const shared = locks();
    const keys = [key(), key(), key()];
    const lost: string[] = [];
    for (const k of keys) await shared.tryAcquire(k, (err) => lost.push(`${k}: ${err.message}`));
    const [pid] = await holders([keys[0]]);
    await other.query('SELECT pg_terminate_backend($1)', [pid]);
    await eventually(async () => (lost.length === 3 ? true : undefined), 'every holder told');
    expect(lost.every((l) => l.includes('the session holding the advisory lock ended'))).toBe(true);

    expect(await shared.tryAcquire(keys[0], ignoreLoss)).not.toBeNull();
    const [again] = await holders([keys[0]]);
    expect(again).not.toBe(pid);
  });

  it('unlocks every key and gives its connection back when closed', async () => {
    const shared = new ProjectionLocks(ds);
    const keys = [key(), key()];
    for (const k of keys) await shared.tryAcquire(k, ignoreLoss);
    await shared.close();
    expect(await holders(keys)).toEqual([]);
    expect(pool().totalCount - pool().idleCount).toBe(0);
  });
});
