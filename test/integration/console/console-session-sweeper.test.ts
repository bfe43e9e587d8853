import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { register } from 'prom-client';
import {
  ConsoleSessionCommand,
  ConsoleSessionEvent,
  consoleSessionStreamId,
  createHcpUpcasters,
  decideConsoleSession,
} from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { ConsoleSessionHolds } from '../../../src/console/console-session-holds';
import { ConsoleSessionSweeper } from '../../../src/console/console-session-sweeper';
import { ConsoleSessionRepository } from '../../../src/console/console-session.repository';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { HcpMetrics } from '../../../src/platform/observability/hcp-metrics';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';

/** A hold taken with this length ran out a minute ago: its instance stopped renewing it. */
const RAN_OUT = -60_000;
const TOKEN_SHA256 = 'a'.repeat(64);

describe('console sessions left open by an HCP instance that died (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  let codec: DomainEventCodec;
  let sessions: ConsoleSessionRepository;
  let sweeper: ConsoleSessionSweeper;
  /** Two HCP instances: one that dies with its consoles, one that lives on. */
  let dead: ConsoleSessionHolds;
  let live: ConsoleSessionHolds;
  const metrics = new HcpMetrics();

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_console_sweep', 3);
    pool = new Pool({ connectionString: database.db.url, max: 3 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    codec = new DomainEventCodec(createHcpUpcasters());
    sessions = new ConsoleSessionRepository(store, codec);
    dead = new ConsoleSessionHolds(database.ds);
    live = new ConsoleSessionHolds(database.ds);
  });

  beforeEach(async () => {
    register.resetMetrics();
    sweeper = new ConsoleSessionSweeper(new ConsoleSessionHolds(database.ds), sessions, metrics);
    await database.ds.query('DELETE FROM console_session_holds');
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  async function decide(sessionId: string, command: ConsoleSessionCommand, actor = 'alice'): Promise<void> {
    await sessions.update(sessionId, (state) => decideConsoleSession(state, command), eventContext(actor, 't-1'));
  }

  /** A session opened by alice, connected unless asked otherwise, with its token valid for `connectMs`. */
  async function session(status: 'connected' | 'awaiting_connection' | 'closed', connectMs = 60_000): Promise<string> {
    const id = randomUUID();
    await decide(id, {
      type: 'open',
      session_id: id,
      project_id: 'acme',
      vm_id: randomUUID(),
      opened_by: 'alice',
      console_type: 'vnc',
      token_sha256: TOKEN_SHA256,
      now: new Date(),
      connect_timeout_ms: connectMs,
      max_duration_ms: 3_600_000,
    });
    if (status !== 'awaiting_connection')
      await decide(id, { type: 'connect', token_sha256: TOKEN_SHA256, now: new Date(), client_address: null });
    if (status === 'closed')
      await decide(id, { type: 'close', reason: 'client_closed', bytes_to_client: 10, bytes_to_provider: 2 });
    return id;
  }

  async function eventsOf(sessionId: string): Promise<ConsoleSessionEvent[]> {
    return (await store.readStream(consoleSessionStreamId(sessionId))).map(
      (r) => codec.decode<ConsoleSessionEvent>(r).event,
    );
  }

  async function holdsOf(sessionId: string): Promise<Array<{ holder: string }>> {
    return database.ds.query('SELECT holder FROM console_session_holds WHERE session_id = $1', [sessionId]);
  }

  const swept = async () =>
    (await metrics.consoleSessionsSwept.get()).values.find((v) => v.labels.reason === 'instance_lost')?.value ?? 0;

  it('closes a connected session whose instance stopped renewing its hold, as instance_lost on behalf of its owner, once', async () => {
    const id = await session('connected');
    await dead.claim(id, RAN_OUT);

    expect(await sweeper.sweep()).toBe(1);
    expect(await sweeper.sweep()).toBe(0);

    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual([
      'ConsoleSessionOpened',
      'ConsoleSessionConnected',
      'ConsoleSessionClosed',
    ]);
    expect(events[2]).toMatchObject({
      version: 2,
      data: { session_id: id, reason: 'instance_lost', bytes_to_client: 0, bytes_to_provider: 0 },
    });
    const [closed] = await store.readStream(consoleSessionStreamId(id), { fromRevision: 2n });
    expect(codec.decode(closed).context.actor).toBe('alice');
    expect((await sessions.load(id)).state).toMatchObject({ status: 'closed', close_reason: 'instance_lost' });
    expect(await holdsOf(id)).toEqual([]);
    expect(await swept()).toBe(1);
  });

  it('leaves the consoles of a live instance alone, and tells the dead one, should it wake, that its console is gone', async () => {
    const relayed = await session('connected');
    const lost = await session('connected');
    await live.claim(relayed);
    await dead.claim(lost, RAN_OUT);

    expect(await sweeper.sweep()).toBe(1);

    expect((await eventsOf(relayed)).map((e) => e.type)).not.toContain('ConsoleSessionClosed');
    expect(await holdsOf(relayed)).toEqual([{ holder: live.instance }]);
    expect(await live.renew([relayed])).toEqual(new Set([relayed]));
    expect(await dead.renew([lost])).toEqual(new Set());
  });

  it('drops without an event the hold of a session that is closed, or was never connected and can no longer be', async () => {
    const closed = await session('closed');
    const unused = await session('awaiting_connection', -1000);
    await dead.claim(closed, RAN_OUT);
    await dead.reserve(unused, RAN_OUT);

    expect(await sweeper.sweep()).toBe(0);

    expect((await eventsOf(closed)).map((e) => e.type)).toEqual([
      'ConsoleSessionOpened',
      'ConsoleSessionConnected',
      'ConsoleSessionClosed',
    ]);
    expect((await eventsOf(unused)).map((e) => e.type)).toEqual(['ConsoleSessionOpened']);
    expect(await holdsOf(closed)).toEqual([]);
    expect(await holdsOf(unused)).toEqual([]);
  });

  it('keeps the hold of a session whose token can still be used (its connection may be under way elsewhere)', async () => {
    const pending = await session('awaiting_connection');
    await dead.reserve(pending, RAN_OUT);

    expect(await sweeper.sweep()).toBe(0);

    expect((await eventsOf(pending)).map((e) => e.type)).toEqual(['ConsoleSessionOpened']);
    expect(await holdsOf(pending)).toEqual([{ holder: sweeper.owner }]);
  });

  it('a reserve does not take over a hold another instance has', async () => {
    const id = await session('connected');
    await live.claim(id);
    await dead.reserve(id);
    expect(await holdsOf(id)).toEqual([{ holder: live.instance }]);
  });

  it('counts a run that fails and throws its error; the next run closes what it left', async () => {
    const id = await session('connected');
    await dead.claim(id, RAN_OUT);
    await database.ds.query('ALTER TABLE console_session_holds RENAME TO console_session_holds_away');
    try {
      await expect(sweeper.sweep()).rejects.toThrow();
    } finally {
      await database.ds.query('ALTER TABLE console_session_holds_away RENAME TO console_session_holds');
    }
    expect((await metrics.consoleSweepFailures.get()).values[0]?.value).toBe(1);

    expect(await sweeper.sweep()).toBe(1);
    expect((await sessions.load(id)).state?.close_reason).toBe('instance_lost');
  });

  it('two sweepers at once close each session once', async () => {
    const ids = await Promise.all([1, 2, 3, 4, 5, 6].map(() => session('connected')));
    for (const id of ids) await dead.claim(id, RAN_OUT);
    const other = new ConsoleSessionSweeper(new ConsoleSessionHolds(database.ds), sessions, metrics);

    const [a, b] = await Promise.all([sweeper.sweep(), other.sweep()]);

    expect(a + b).toBe(6);
    for (const id of ids) {
      expect((await eventsOf(id)).filter((e) => e.type === 'ConsoleSessionClosed')).toHaveLength(1);
    }
  });
});
