import { DataSource } from 'typeorm';
import { ABANDONED_AFTER_SECONDS, IdempotencyStore } from '../../../src/http/idempotency/idempotency-store';
import { createDataSource } from '../../../src/platform/persistence/data-source';
import { migrate } from '../../../src/platform/persistence/migrate';
import { createTestDatabase, TestDatabase } from '../../support/test-database';

describe('idempotency store', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let store: IdempotencyStore;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_idem');
    ds = createDataSource(db.url, { poolSize: 30 });
    await ds.initialize();
    await migrate(ds);
    store = new IdempotencyStore(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('lets exactly one of many concurrent claimers run', async () => {
    const claims = await Promise.all(Array.from({ length: 25 }, () => store.claim('p', 'k1', 'h')));
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
    expect(claims.filter((c) => c.kind === 'pending')).toHaveLength(24);
  });

  it('replays the completed answer and reports the first request hash', async () => {
    expect((await store.claim('p', 'k2', 'h')).kind).toBe('claimed');
    await store.complete('p', 'k2', { status: 202, body: { b: 1, a: 2 }, location: '/x' });
    const again = await store.claim('p', 'k2', 'other-hash');
    expect(again).toEqual({
      kind: 'completed',
      requestHash: 'h',
      answer: { status: 202, body: { b: 1, a: 2 }, location: '/x' },
    });
  });

  it('frees a key whose request failed', async () => {
    expect((await store.claim('p', 'k3', 'h')).kind).toBe('claimed');
    await store.release('p', 'k3');
    expect((await store.claim('p', 'k3', 'h')).kind).toBe('claimed');
  });

  it('lets the same request take over a claim abandoned by a crash, but not another request', async () => {
    expect((await store.claim('p', 'k4', 'h')).kind).toBe('claimed');
    await ds.query(`UPDATE idempotency_keys SET updated_at = now() - interval '2 minutes' WHERE key = 'k4'`);
    expect((await store.claim('p', 'k4', 'different')).kind).toBe('pending');
    expect((await store.claim('p', 'k4', 'h')).kind).toBe('claimed');
  });

  it('keeps a claim younger than the abandonment time pending, and lets its retry take it over after it', async () => {
    expect((await store.claim('p', 'k6', 'h')).kind).toBe('claimed');
    const aged = (seconds: number) =>
      ds.query(`UPDATE idempotency_keys SET updated_at = now() - make_interval(secs => $1) WHERE key = 'k6'`, [
        seconds,
      ]);
    await aged(ABANDONED_AFTER_SECONDS - 2);
    expect((await store.claim('p', 'k6', 'h')).kind).toBe('pending');
    await aged(ABANDONED_AFTER_SECONDS + 1);
    expect((await store.claim('p', 'k6', 'h')).kind).toBe('claimed');
  });

  it('forgets answers after 24 hours', async () => {
    expect((await store.claim('p', 'k5', 'h')).kind).toBe('claimed');
    await store.complete('p', 'k5', { status: 202, body: {}, location: null });
    await ds.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'k5'`);
    expect((await store.claim('p', 'k5', 'new')).kind).toBe('claimed');
    await ds.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'k5'`);
    expect(await store.purgeExpired()).toBe(1);
  });

  it('keeps keys of different projects apart', async () => {
    expect((await store.claim('a', 'same', 'h')).kind).toBe('claimed');
    expect((await store.claim('b', 'same', 'h')).kind).toBe('claimed');
  });
});
