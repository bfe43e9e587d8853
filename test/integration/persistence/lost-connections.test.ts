import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { PostgresEventStore } from '@hcp/eventstore';
import { eventStoreNames } from '@hcp/eventstore/postgres/postgres-event-store.schema';
import { survivePoolConnectionLoss } from '../../../src/platform/persistence/lost-connections';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';

/**
 * A DBA's pg_terminate_backend, a failover or a restart drops connections that are checked out of a
 * pool. Such a client emits 'error'; with nobody listening, Node ends the process (issue #14). These
 * tests drop connections in the middle of work and expect an error for that work, and nothing else.
 */
describe('lost database connections', () => {
  let m: MigratedDatabase;
  let admin: Client;

  beforeAll(async () => {
    m = await migratedTestDatabase('hcp_lost');
    admin = new Client({ connectionString: m.db.url });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await m?.close();
  });

  const terminate = async (applicationName: string, waitingOn?: string): Promise<number> => {
    for (let i = 0; i < 200; i++) {
      const { rows } = await admin.query<{ terminated: boolean }>(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
         WHERE application_name = $1 AND ($2::text IS NULL OR wait_event_type = $2)`,
        [applicationName, waitingOn ?? null],
      );
      if (rows.length > 0) return rows.length;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no backend of ${applicationName} to terminate`);
  };

  it('fails an append whose connection is dropped mid-transaction, and appends again afterwards', async () => {
    const name = `hcp-lost-${randomUUID().slice(0, 8)}`;
    const pool = new Pool({ connectionString: m.db.url, max: 1, application_name: name });
    pool.on('error', () => undefined);
    const store = new PostgresEventStore({ pool });
    const stream = `vm-${randomUUID()}`;
    // Hold the stream's lock, so the append waits inside its transaction until its backend is killed.
    const holder = new Client({ connectionString: m.db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        eventStoreNames('public').streamLockKey(stream),
      ]);
      const append = store.append(stream, [{ id: randomUUID(), type: 'Tested', data: {} }], 'no_stream');
      const outcome = append.then(
        () => 'appended',
        (err: Error) => err.message,
      );
      expect(await terminate(name, 'Lock')).toBe(1);
      expect(await outcome).toMatch(/terminat|Connection/i);
      await holder.query('COMMIT');

      const again = await store.append(stream, [{ id: randomUUID(), type: 'Tested', data: {} }], 'no_stream');
      expect(again.nextExpectedRevision).toBe(0n);
    } finally {
      await holder.end();
      await store.close();
      await pool.end();
    }
  });

  it('keeps a pool guarded by survivePoolConnectionLoss alive when a checked-out client is dropped', async () => {
    const name = `hcp-lost-${randomUUID().slice(0, 8)}`;
    const pool = new Pool({ connectionString: m.db.url, max: 1, application_name: name });
    pool.on('error', () => undefined);
    const lost: Error[] = [];
    survivePoolConnectionLoss(pool, (err) => lost.push(err));
    try {
      const client = await pool.connect();
      const sleeping = client.query('SELECT pg_sleep(30)').then(
        () => 'slept',
        (err: Error) => err.message,
      );
      expect(await terminate(name)).toBe(1);
      expect(await sleeping).toMatch(/terminat|Connection/i);
      client.release();
      // pg-pool discards a client once its socket has ended; released before that, the dropped client
      // can fail one more query. The pool recovers either way, and the process is still here.
      const next = () => pool.query<{ one: number }>('SELECT 1 AS one');
      const { rows } = await next().catch((err: Error) => {
        expect(err.message).toMatch(/terminat|Connection/i);
        return next();
      });
      expect(rows).toEqual([{ one: 1 }]);
      expect(lost.length).toBeGreaterThan(0);
    } finally {
      await pool.end();
    }
  });
});
