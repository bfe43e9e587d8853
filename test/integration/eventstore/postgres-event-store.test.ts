import { randomBytes } from 'node:crypto';
import { Client, Pool, type PoolClient } from 'pg';
import {
  PostgresEventStore,
  StreamBusyError,
  WrongExpectedRevisionError,
  dropPostgresEventStoreSchema,
  installPostgresEventStoreSchema,
  type PostgresEventStoreOptions,
  type RecordedEvent,
} from '@hcp/eventstore';
import {
  Collector,
  describeEventStoreContract,
  expectStrictlyIncreasing,
  newEvent,
  newEvents,
  sleep,
} from './event-store.contract';
import { plansScanningWholeTable, type CapturedStatement } from '../../support/query-plans';

const DATABASE_URL = process.env.HCP_TEST_DATABASE_URL ?? 'postgres://hcp:hcp@127.0.0.1:5432/hcp_test';

interface PostgresFixture {
  pool: Pool;
  schema: string;
  store: PostgresEventStore;
  /** Resolves once every event appended so far is below the server's read horizon (see the contract). */
  allReadable(): Promise<void>;
  /** Opens a store on the same schema with other options (it is closed by cleanup too). */
  anotherStore(options: Omit<PostgresEventStoreOptions, 'pool' | 'schema'>): PostgresEventStore;
  cleanup(): Promise<void>;
}

/** Each suite gets its own schema so parallel jest workers never see each other's events. */
async function createFixture(
  options: Omit<PostgresEventStoreOptions, 'pool' | 'schema'> = {},
): Promise<PostgresFixture> {
  const pool = new Pool({ connectionString: DATABASE_URL, max: 30 });
  const schema = `es_test_${randomBytes(6).toString('hex')}`;
  await installPostgresEventStoreSchema(pool, schema);
  const stores = [new PostgresEventStore({ pool, schema, pollIntervalMs: 250, ...options })];
  return {
    pool,
    schema,
    store: stores[0]!,
    async allReadable() {
      // Readable means below the oldest transaction in flight on the server: wait for that horizon to pass
      // the transaction of the last append.
      const { rows } = await pool.query<{ last: string | null }>(
        `SELECT max(tx_id)::text AS last FROM "${schema}".hcp_events`,
      );
      const last = rows[0]?.last;
      if (!last) return;
      while (
        !(
          await pool.query<{ passed: boolean }>(`SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8 AS passed`, [
            last,
          ])
        ).rows[0]!.passed
      ) {
        await sleep(20);
      }
    },
    anotherStore(more) {
      const store = new PostgresEventStore({ pool, schema, ...more });
      stores.push(store);
      return store;
    },
    async cleanup() {
      await Promise.all(stores.map((store) => store.close()));
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    },
  };
}

describeEventStoreContract('PostgreSQL', createFixture);

describe('PostgresEventStore on PostgreSQL', () => {
  let fixture: PostgresFixture;
  let counter = 0;
  const uniquePrefix = (): string => `pg${++counter}-`;

  beforeAll(async () => {
    fixture = await createFixture();
  });

  afterAll(async () => {
    await fixture?.cleanup();
  });

  /** A connection outside the store, for transactions the test holds open. */
  async function rawClient(): Promise<Client> {
    const client = new Client({ connectionString: DATABASE_URL });
    await client.connect();
    return client;
  }

  async function insertRaw(client: Client, streamId: string, id: string): Promise<bigint> {
    const { rows } = await client.query<{ position: string }>(
      `INSERT INTO "${fixture.schema}".hcp_events (stream_id, revision, event_id, type, data)
       VALUES ($1, 0, $2, 'RawInserted', '{}') RETURNING position::text AS position`,
      [streamId, id],
    );
    return BigInt(rows[0]!.position);
  }

  it('never lets a subscription skip an event whose transaction commits after a later one', async () => {
    const prefix = uniquePrefix();
    const head = await fixture.store.headPosition();
    const collector = new Collector().start(fixture.store, { fromPosition: head, streamPrefixes: [prefix] });
    const slow = await rawClient();
    try {
      await slow.query('BEGIN');
      const early = newEvent();
      const earlyPosition = await insertRaw(slow, `${prefix}slow`, early.id);
      const late = newEvent();
      const appended = await fixture.store.append(`${prefix}fast`, [late], 'no_stream');
      expect(appended.position).toBeGreaterThan(earlyPosition);

      // The later event is committed and visible, yet must wait for the earlier, still open, one.
      await sleep(600);
      expect(collector.events).toEqual([]);
      expect((await fixture.store.readAll(head, 100)).map((e) => e.id)).not.toContain(late.id);

      await slow.query('COMMIT');
      await collector.waitForCount(2);

      expect(collector.ids()).toEqual([early.id, late.id]);
      expect(collector.events.map((e) => e.position)).toEqual([earlyPosition, appended.position]);
    } finally {
      await slow.end();
      await collector.stop();
    }
  }, 20_000);

  it('delivers every event once, in order, to subscriptions of different speeds sharing a tail window writers race', async () => {
    const prefix = uniquePrefix();
    // A window of 20 events: the slow subscriptions fall behind it, read on their own, and come back.
    const store = fixture.anotherStore({ pollIntervalMs: 50, tailWindowEvents: 20 });
    const head = await store.headPosition();
    const pause = (ms: number) => () => sleep(ms);
    const subscriptions = [
      { prefixes: [prefix], handler: undefined },
      { prefixes: [`${prefix}even`], handler: pause(1) },
      { prefixes: [prefix], handler: () => sleep(Math.random() < 0.1 ? 20 : 0) },
    ].map(({ prefixes, handler }) =>
      new Collector().start(store, { fromPosition: head, streamPrefixes: prefixes }, handler),
    );
    const writers = 10;
    const appendsEach = 30;
    try {
      const written = await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          const streamId = `${prefix}${w % 2 === 0 ? 'even' : 'odd'}-${w}`;
          const ids: string[] = [];
          for (let i = 0; i < appendsEach; i++) {
            const event = newEvent();
            await store.append(streamId, [event], i === 0 ? 'no_stream' : BigInt(i - 1));
            ids.push(event.id);
          }
          return { streamId, ids };
        }),
      );
      const all = written.flatMap((w) => w.ids);
      const even = written.filter((w) => w.streamId.startsWith(`${prefix}even`)).flatMap((w) => w.ids);
      await subscriptions[0]!.waitForCount(all.length, 20_000);
      await subscriptions[1]!.waitForCount(even.length, 20_000);
      await subscriptions[2]!.waitForCount(all.length, 20_000);
      await sleep(200);

      for (const [collector, expected] of [
        [subscriptions[0]!, all],
        [subscriptions[1]!, even],
        [subscriptions[2]!, all],
      ] as const) {
        expect([...collector.ids()].sort()).toEqual([...expected].sort());
        const positions = collector.events.map((e) => e.position);
        expect(positions.every((p, i) => i === 0 || p > positions[i - 1]!)).toBe(true);
      }
      // Each stream's events arrive in revision order.
      for (const { streamId, ids } of written)
        expect(subscriptions[0]!.events.filter((e) => e.streamId === streamId).map((e) => e.id)).toEqual(ids);
    } finally {
      await Promise.all(subscriptions.map((collector) => collector.stop()));
    }
  }, 60_000);

  it('moves past the gap a rolled-back transaction leaves', async () => {
    const prefix = uniquePrefix();
    const head = await fixture.store.headPosition();
    const collector = new Collector().start(fixture.store, { fromPosition: head, streamPrefixes: [prefix] });
    const aborted = await rawClient();
    try {
      await aborted.query('BEGIN');
      await insertRaw(aborted, `${prefix}aborted`, newEvent().id);
      const late = newEvent();
      await fixture.store.append(`${prefix}fast`, [late], 'no_stream');
      await sleep(300);
      expect(collector.events).toEqual([]);

      await aborted.query('ROLLBACK');
      await collector.waitForCount(1);

      expect(collector.ids()).toEqual([late.id]);
    } finally {
      await aborted.end();
      await collector.stop();
    }
  }, 20_000);

  it('keeps transaction id order and position order the same under concurrent appends', async () => {
    const prefix = uniquePrefix();
    await Promise.all(
      Array.from({ length: 16 }, async (_, writer) => {
        for (let i = 0; i < 25; i++) await fixture.store.append(`${prefix}s${writer % 4}`, newEvents(2), 'any');
      }),
    );

    // The subscription's no-skip guarantee rests on this: a larger position never has an older writer.
    const { rows } = await fixture.pool.query<{ inversions: string }>(
      `SELECT count(*)::text AS inversions
       FROM "${fixture.schema}".hcp_events a
       JOIN "${fixture.schema}".hcp_events b ON a.position < b.position AND a.tx_id > b.tx_id
       WHERE a.stream_id LIKE $1 AND b.stream_id LIKE $1`,
      [`${prefix}%`],
    );
    expect(rows[0]!.inversions).toBe('0');
  });

  it('wakes subscribers through NOTIFY and recovers when the LISTEN connection drops', async () => {
    const prefix = uniquePrefix();
    // With polling this slow, prompt delivery can only come from a notification.
    const store = fixture.anotherStore({ pollIntervalMs: 60_000 });
    const head = await store.headPosition();
    const collector = new Collector().start(store, { fromPosition: head, streamPrefixes: [prefix] });
    try {
      await sleep(100);
      await store.append(`${prefix}vm`, [newEvent()], 'no_stream');
      await collector.waitForCount(1, 3_000);

      const killed = await fixture.pool.query<{ terminated: boolean }>(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
           WHERE query = $1 AND pid <> pg_backend_pid()`,
        [`LISTEN "${fixture.schema}_hcp_events"`],
      );
      expect(killed.rows.length).toBeGreaterThan(0);
      await sleep(500);
      await store.append(`${prefix}vm`, [newEvent()], 0n);
      await collector.waitForCount(2, 5_000);
      expect(collector.errors).toEqual([]);
    } finally {
      await collector.stop();
    }
  }, 20_000);

  it('names every category one appendMany committed in a single notification', async () => {
    const prefix = uniquePrefix().replace(/-$/, '');
    const listener = new Client({ connectionString: DATABASE_URL });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (n) => payloads.push(n.payload ?? ''));
    await listener.query(`LISTEN "${fixture.schema}_hcp_events"`);
    try {
      const streams = ['quota', 'vm', 'job'].map((kind) => `${prefix}${kind}-1`);
      await fixture.store.appendMany(
        streams.map((streamId) => ({ streamId, events: [newEvent()], expected: 'no_stream' })),
      );
      await sleep(300);
      const ours = payloads.filter((p) => p.includes(prefix));
      expect(ours).toHaveLength(1);
      expect(ours[0]!.split(',').sort()).toEqual(streams.map((s) => s.replace(/1$/, '')).sort());
    } finally {
      await listener.end();
    }
  });

  it("notifies the channels a commit's SQL writes name after it, in the commit's own notifying transaction", async () => {
    const prefix = uniquePrefix().replace(/-$/, '');
    const channel = `${fixture.schema}_waiters`;
    const listener = new Client({ connectionString: DATABASE_URL });
    await listener.connect();
    const received: Array<{ channel: string; processId: number }> = [];
    listener.on('notification', (n) => received.push({ channel: n.channel, processId: n.processId }));
    await listener.query(`LISTEN "${fixture.schema}_hcp_events"`);
    await listener.query(`LISTEN "${channel}"`);
    try {
      const wake = { sql: 'SELECT 1', params: [], notifies: channel };
      await fixture.store.appendMany(
        ['a', 'b'].map((kind) => ({ streamId: `${prefix}${kind}-1`, events: [newEvent()], expected: 'no_stream' })),
        { sqlWrites: [wake, wake] },
      );
      await sleep(300);
      const waiters = received.filter((n) => n.channel === channel);
      expect(waiters).toHaveLength(1);
      // Sent by the session that sent the store's own notification of the commit: one transaction for both.
      const events = received.filter((n) => n.channel !== channel);
      expect(events.map((n) => n.processId)).toContain(waiters[0]!.processId);
    } finally {
      await listener.end();
    }
  });

  it('reads a commit for the live subscriptions it wakes in reads of the whole tail, each getting only its own streams', async () => {
    const [a, b, c] = [uniquePrefix(), uniquePrefix(), uniquePrefix()];
    // With polling this slow, only the commit's notification wakes them (and retries of a blocked read).
    const store = fixture.anotherStore({ pollIntervalMs: 60_000 });
    const head = await store.headPosition();
    const collectors = [a, b, c].map((prefix) =>
      new Collector().start(store, { fromPosition: head, streamPrefixes: [prefix] }),
    );
    const reads = jest.spyOn(fixture.pool, 'query');
    try {
      await sleep(300);
      reads.mockClear();
      await store.appendMany([
        { streamId: `${a}vm-1`, events: [newEvent()], expected: 'no_stream' },
        { streamId: `${b}job-1`, events: [newEvent(), newEvent()], expected: 'no_stream' },
      ]);
      await collectors[0]!.waitForCount(1, 3_000);
      await collectors[1]!.waitForCount(2, 3_000);
      await sleep(100);

      // Other suites' transactions on the server may block a read and make it retry, so count no reads:
      // once live, the subscriptions read no page of their own; the store's tail window reads every
      // stream for all of them (TailWindow), and each gets its own streams from it.
      // A statement is sent as its text and values, or as a prepared statement's config holding both.
      const statements = reads.mock.calls.map(([query, params]) =>
        typeof query === 'string' ? { text: query, values: params } : (query as { text: string; values: unknown }),
      );
      const readPrefixes = statements
        .filter(({ text }) => text.includes('head.max_position'))
        .map(({ values }) => (values as unknown[])[2]);
      expect(readPrefixes.length).toBeGreaterThan(0);
      expect(readPrefixes.every((prefixes) => prefixes === null)).toBe(true);
      expect(collectors.map((collector) => collector.events.map((e) => e.streamId))).toEqual([
        [`${a}vm-1`],
        [`${b}job-1`, `${b}job-1`],
        [],
      ]);
      expect(collectors.flatMap((collector) => collector.errors)).toEqual([]);
    } finally {
      reads.mockRestore();
      await Promise.all(collectors.map((collector) => collector.stop()));
    }
  });

  it('answers stream reads asked at once in fewer statements, each as a read of its own would', async () => {
    const prefix = uniquePrefix();
    const streams = Array.from({ length: 8 }, (_, i) => `${prefix}vm-${i}`);
    for (const [i, streamId] of streams.entries()) await fixture.store.append(streamId, newEvents(i + 1), 'no_stream');
    const alone = new Map<string, RecordedEvent[]>();
    for (const streamId of streams) alone.set(streamId, await fixture.store.readStream(streamId, { fromRevision: 1n }));
    const reads = jest.spyOn(fixture.pool, 'query');
    try {
      // Every stream twice (once whole, once from revision 1) and one that does not exist.
      const asked = [...streams, ...streams, `${prefix}vm-absent`];
      const answers = await Promise.all(
        asked.map((streamId, i) => fixture.store.readStream(streamId, { fromRevision: i < 8 ? 0n : 1n })),
      );

      expect(reads.mock.calls.length).toBeLessThan(asked.length);
      expect(answers.slice(0, 8).map((events) => events.length)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(answers.slice(8, 16)).toEqual(streams.map((streamId) => alone.get(streamId)));
      expect(answers[16]).toEqual([]);
    } finally {
      reads.mockRestore();
    }
  });

  it('reads many streams through the stream index even before the table has statistics', async () => {
    // A fresh database: no ANALYZE has run, so the planner guesses. It once chose to hash-join the wanted
    // streams against a scan of every event (bench/README.md, "the eleventh session").
    const fresh = await createFixture();
    try {
      const table = `"${fresh.schema}".hcp_events`;
      await fresh.pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
      const streams = Array.from({ length: 2_000 }, (_, i) => `vm-${i}`);
      for (let i = 0; i < streams.length; i += 200) {
        await fresh.store.appendMany(
          streams.slice(i, i + 200).map((streamId) => ({ streamId, events: newEvents(3), expected: 'no_stream' })),
        );
      }
      const reads = jest.spyOn(fresh.pool, 'query');
      const wanted = streams.slice(0, 80).map((streamId) => ({ streamId }));
      let answer: Map<string, RecordedEvent[]>;
      let statement: CapturedStatement;
      try {
        answer = await fresh.store.readStreams(wanted);
        statement = reads.mock.calls.map(([config]) => config as unknown as CapturedStatement).at(-1)!;
      } finally {
        reads.mockRestore();
      }
      expect([...answer.values()].map((events) => events.length)).toEqual(wanted.map(() => 3));

      const client = await fresh.pool.connect();
      try {
        const run = async (sql: string) => (await client.query(sql)).rows;
        expect(await plansScanningWholeTable(run, statement, 'hcp_events')).toEqual([]);
      } finally {
        client.release();
      }
    } finally {
      await fresh.cleanup();
    }
  });

  it('looks ids up through the indexes in the append guard of a connection that first ran it on a nearly empty table', async () => {
    // PostgreSQL plans a function's statements once per connection. Planned on a new table, the guard
    // once kept scanning every event for the ids, on every append after (bench/README.md, "the twentieth
    // session").
    const fresh = await createFixture();
    const client = await fresh.pool.connect();
    try {
      const table = `"${fresh.schema}".hcp_events`;
      await fresh.pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
      await fresh.store.append('vm-first', newEvents(2), 'no_stream');
      const guard = (streamId: string, expected: number) =>
        client.query(`SELECT "${fresh.schema}".hcp_append_guard($1, $2, $3, $4, false)`, [
          [streamId],
          [expected],
          [newEvent().id],
          [`${fresh.schema}/${streamId}`],
        ]);
      // More calls than the five PostgreSQL plans afresh before it keeps a generic plan.
      for (let i = 0; i < 8; i++) await guard('vm-first', 1);

      const streams = Array.from({ length: 3_000 }, (_, i) => `vm-${i}`);
      for (let i = 0; i < streams.length; i += 500) {
        await fresh.store.appendMany(
          streams.slice(i, i + 500).map((streamId) => ({ streamId, events: newEvents(3), expected: 'no_stream' })),
        );
      }

      // The counts not yet sent to the statistics collector include earlier transactions': compare two.
      const scans = async () =>
        (
          await client.query(
            `SELECT seq_scan::int AS seq_scan, idx_scan::int AS idx_scan FROM pg_stat_xact_user_tables WHERE relid = $1::regclass`,
            [table],
          )
        ).rows[0] as { seq_scan: number; idx_scan: number };
      await client.query('BEGIN');
      const before = await scans();
      await guard('vm-7', 2);
      const after = await scans();
      await client.query('ROLLBACK');
      expect({ seq_scan: after.seq_scan - before.seq_scan, idx_scan: after.idx_scan - before.idx_scan }).toEqual({
        seq_scan: 0,
        idx_scan: 2,
      });
    } finally {
      client.release();
      await fresh.cleanup();
    }
  });

  it('commits appends asked at once in one transaction, each answered as an append of its own would be', async () => {
    const prefix = uniquePrefix();
    const streams = Array.from({ length: 8 }, (_, i) => `${prefix}job-${i}`);
    await fixture.store.append(streams[0]!, newEvents(2), 'no_stream');

    const results = await Promise.all(
      streams.map((streamId, i) => fixture.store.append(streamId, newEvents(i + 1), i === 0 ? 1n : 'no_stream')),
    );

    const { rows } = await fixture.pool.query<{ transactions: string }>(
      `SELECT count(DISTINCT tx_id)::text AS transactions FROM "${fixture.schema}".hcp_events
       WHERE stream_id LIKE $1 AND position > (SELECT min(position) + 1 FROM "${fixture.schema}".hcp_events WHERE stream_id = $2)`,
      [`${prefix}%`, streams[0]],
    );
    expect(Number(rows[0]!.transactions)).toBeLessThan(streams.length);
    for (const [i, streamId] of streams.entries()) {
      const stored = await fixture.store.readStream(streamId);
      expect(results[i]).toEqual({ nextExpectedRevision: stored.at(-1)!.revision, position: stored.at(-1)!.position });
    }
    expect(results.map((r) => r.nextExpectedRevision)).toEqual([2n, 1n, 2n, 3n, 4n, 5n, 6n, 7n]);
  });

  it('refuses only the append whose expectation failed among appends sharing a transaction', async () => {
    const prefix = uniquePrefix();
    await fixture.store.append(`${prefix}taken`, [newEvent()], 'no_stream');
    const storedElsewhere = newEvent();
    await fixture.store.append(`${prefix}elsewhere`, [storedElsewhere], 'no_stream');

    const outcomes = await Promise.allSettled([
      fixture.store.append(`${prefix}a`, [newEvent()], 'no_stream'),
      fixture.store.append(`${prefix}taken`, [newEvent()], 'no_stream'),
      fixture.store.appendMany([
        { streamId: `${prefix}b`, events: [newEvent()], expected: 'no_stream' },
        { streamId: `${prefix}c`, events: [storedElsewhere], expected: 'no_stream' },
      ]),
      fixture.store.append(`${prefix}d`, [newEvent()], 'no_stream'),
    ]);

    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
    expect((outcomes[2] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
    // A refused appendMany writes none of its streams.
    expect(await fixture.store.readStream(`${prefix}b`)).toEqual([]);
    expect(await fixture.store.readStream(`${prefix}taken`)).toHaveLength(1);
    expect(await fixture.store.readStream(`${prefix}a`)).toHaveLength(1);
    expect(await fixture.store.readStream(`${prefix}d`)).toHaveLength(1);
  });

  type Query = (text: string) => Promise<unknown>;

  /**
   * Puts `wrap` around the query of every connection the store checks out, until the spy is restored.
   * (pool.query checks out with a callback: those connections are left as they are.)
   */
  function wrapStoreQueries(wrap: (query: Query) => Query) {
    const connect = fixture.pool.connect.bind(fixture.pool) as (callback?: unknown) => Promise<PoolClient>;
    return jest.spyOn(fixture.pool, 'connect').mockImplementation(((callback?: unknown) => {
      if (callback) return connect(callback);
      return connect().then((client) =>
        Object.assign(Object.create(client) as PoolClient, { query: wrap(client.query.bind(client) as Query) }),
      );
    }) as never);
  }

  it('commits each append alone when the transaction they shared failed, so a failure stays with its own', async () => {
    const prefix = uniquePrefix();
    let failures = 0;
    // The first shared insert fails as a connection lost mid-script would: the appends must still land.
    const spy = wrapStoreQueries((query) => async (text) => {
      const shared = text.includes(`${prefix}s0`) && text.includes('INSERT INTO');
      if (shared && failures === 0) {
        failures += 1;
        throw new Error('injected: the shared transaction failed');
      }
      return query(text);
    });
    try {
      const results = await Promise.all(
        [0, 1, 2].map((i) => fixture.store.append(`${prefix}s${i}`, [newEvent()], 'no_stream')),
      );

      expect(failures).toBe(1);
      expect(results.map((r) => r.nextExpectedRevision)).toEqual([0n, 0n, 0n]);
      for (const i of [0, 1, 2]) expect(await fixture.store.readStream(`${prefix}s${i}`)).toHaveLength(1);
      expect(fixture.pool.waitingCount).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  /** Counts the round trips (client.query calls) of the store's checked-out connections while `run` runs. */
  async function roundTrips(run: () => Promise<unknown>): Promise<number> {
    let trips = 0;
    const spy = wrapStoreQueries((query) => (text) => {
      trips += 1;
      return query(text);
    });
    try {
      await run();
      return trips;
    } finally {
      spy.mockRestore();
    }
  }

  it('commits new events where their streams are expected in one round trip, and a decision in two', async () => {
    const prefix = uniquePrefix();
    await fixture.store.append(`${prefix}quota`, [newEvent()], 'no_stream');

    const appendTrips = await roundTrips(() =>
      fixture.store.appendMany([
        { streamId: `${prefix}vm`, events: newEvents(2), expected: 'no_stream' },
        { streamId: `${prefix}job`, events: [newEvent()], expected: 'no_stream' },
      ]),
    );
    const decidedTrips = await roundTrips(() =>
      fixture.store.appendDecided(`${prefix}quota`, 1n, (recorded) => ({
        appends: [
          { streamId: `${prefix}quota`, events: [newEvent()], expected: recorded.at(-1)?.revision ?? 0n },
          { streamId: `${prefix}vm`, events: [newEvent()], expected: 1n },
        ],
      })),
    );

    expect([appendTrips, decidedTrips]).toEqual([1, 2]);
    expect((await fixture.store.readStream(`${prefix}vm`)).map((e) => e.revision)).toEqual([0n, 1n, 2n]);
    expect((await fixture.store.readStream(`${prefix}quota`)).map((e) => e.revision)).toEqual([0n, 1n]);
  });

  it('answers a retry, a stale expectation and an id stored elsewhere exactly after its guard refuses them', async () => {
    const prefix = uniquePrefix();
    const events = newEvents(2);
    const original = await fixture.store.append(`${prefix}a`, events, 'no_stream');
    const elsewhere = newEvent();
    await fixture.store.append(`${prefix}b`, [elsewhere], 'no_stream');

    let retried: unknown;
    // Three round trips: the refused guarded script, the rollback, then the planned state read, which
    // recognises the retry and writes nothing.
    const trips = await roundTrips(async () => {
      retried = await fixture.store.append(`${prefix}a`, events, 'no_stream');
    });
    const stale = fixture.store.append(`${prefix}a`, [newEvent()], 0n);
    const stolen = fixture.store.append(`${prefix}c`, [elsewhere], 'no_stream');

    expect(retried).toEqual(original);
    expect(trips).toBeGreaterThan(1);
    await expect(stale).rejects.toMatchObject({ streamId: `${prefix}a`, actual: 1n });
    await expect(stolen).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect(await fixture.store.readStream(`${prefix}a`)).toHaveLength(2);
    expect(await fixture.store.readStream(`${prefix}c`)).toEqual([]);
  });

  it('fails an appendDecided whose other stream another writer holds, instead of waiting on it, and writes nothing', async () => {
    const prefix = uniquePrefix();
    const [quota, vm] = [`${prefix}quota`, `${prefix}vm`];
    const holder = await rawClient();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
        `hcp_events/${fixture.schema}/stream/${vm}`,
      ]);

      // The held stream between two free ones: the refusal names it, not a neighbour.
      const refused = fixture.store.appendDecided(quota, 0n, () => ({
        appends: [
          { streamId: quota, events: [newEvent()], expected: 'no_stream' },
          { streamId: `${prefix}a`, events: [newEvent()], expected: 'no_stream' },
          { streamId: vm, events: [newEvent()], expected: 'no_stream' },
          { streamId: `${prefix}z`, events: [newEvent()], expected: 'no_stream' },
        ],
      }));

      await expect(refused).rejects.toBeInstanceOf(StreamBusyError);
      await expect(refused).rejects.toMatchObject({ streamId: vm });
      expect(await fixture.store.readStream(quota)).toEqual([]);
      expect(await fixture.store.readStream(`${prefix}a`)).toEqual([]);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    // Nothing of the refused call is left behind: its stream's lock and the connection work again.
    await fixture.store.appendDecided(quota, 0n, () => ({
      appends: [{ streamId: quota, events: [newEvent()], expected: 'no_stream' }],
    }));
    expect(await fixture.store.readStream(quota)).toHaveLength(1);
  });

  it('shares one LISTEN connection between subscriptions and gives it back when the last one stops', async () => {
    const listening = async (): Promise<number> => {
      const { rows } = await fixture.pool.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM pg_stat_activity WHERE query = $1 AND state = 'idle'`,
        [`LISTEN "${fixture.schema}_hcp_events"`],
      );
      return Number(rows[0]!.n);
    };
    const store = fixture.anotherStore({});
    const handler = async (): Promise<void> => undefined;
    const before = await listening();
    const first = store.subscribeToAll(handler, { fromPosition: await store.headPosition() });
    const second = store.subscribeToAll(handler, { fromPosition: await store.headPosition() });
    await sleep(300);
    const whileRunning = await listening();

    await first.stop();
    const afterFirst = await listening();
    await second.stop();
    const afterBoth = await listening();

    expect([before, whileRunning, afterFirst, afterBoth]).toEqual([0, 1, 1, 0]);
  });

  it('refuses an event id already stored in another stream with WrongExpectedRevisionError', async () => {
    const prefix = uniquePrefix();
    const event = newEvent();
    await fixture.store.append(`${prefix}a`, [event], 'no_stream');

    await expect(fixture.store.append(`${prefix}b`, [event], 'no_stream')).rejects.toBeInstanceOf(
      WrongExpectedRevisionError,
    );
    await expect(fixture.store.readStream(`${prefix}b`)).resolves.toEqual([]);
  });

  it('commits the SQL writes of an appendMany with its events, and neither when one of the writes fails', async () => {
    const prefix = uniquePrefix();
    const rows = `"${fixture.schema}".caller_rows`;
    await fixture.pool.query(`CREATE TABLE IF NOT EXISTS ${rows} (id text PRIMARY KEY, note text)`);
    const write = (id: string, note: string | null) => ({
      sql: `INSERT INTO ${rows} (id, note) VALUES ($1, $2)`,
      params: [id, note],
    });

    await fixture.store.appendMany([{ streamId: `${prefix}a`, events: [newEvent()], expected: 'no_stream' }], {
      sqlWrites: [write(`${prefix}1`, "it's $2 quoted"), write(`${prefix}2`, null)],
    });
    const failed = await fixture.store
      .appendMany([{ streamId: `${prefix}b`, events: [newEvent()], expected: 'no_stream' }], {
        sqlWrites: [write(`${prefix}3`, 'x'), write(`${prefix}1`, 'again')],
      })
      .catch((err: unknown) => err);
    const after = await fixture.store.append(`${prefix}c`, [newEvent()], 'no_stream');

    const { rows: stored } = await fixture.pool.query(`SELECT id, note FROM ${rows} WHERE id LIKE $1 ORDER BY id`, [
      `${prefix}%`,
    ]);
    expect(stored).toEqual([
      { id: `${prefix}1`, note: "it's $2 quoted" },
      { id: `${prefix}2`, note: null },
    ]);
    expect(failed).not.toBeInstanceOf(WrongExpectedRevisionError);
    expect(failed).toMatchObject({ code: '23505' });
    expect(await fixture.store.readStream(`${prefix}b`)).toEqual([]);
    expect(after.nextExpectedRevision).toBe(0n);
  });

  it('keeps appending after a failed append (no lock or connection leaks)', async () => {
    const prefix = uniquePrefix();
    const event = newEvent();
    await fixture.store.append(`${prefix}a`, [event], 'no_stream');
    for (let i = 0; i < 40; i++) {
      await expect(fixture.store.append(`${prefix}b${i}`, [newEvent(), event], 'any')).rejects.toBeInstanceOf(
        WrongExpectedRevisionError,
      );
    }

    const appended = await fixture.store.append(`${prefix}c`, newEvents(2), 'no_stream');

    expect(appended.nextExpectedRevision).toBe(1n);
    expect(fixture.pool.waitingCount).toBe(0);
  });

  it('installs idempotently and drops the table', async () => {
    const schema = `es_test_${randomBytes(6).toString('hex')}`;
    try {
      await installPostgresEventStoreSchema(fixture.pool, schema);
      await installPostgresEventStoreSchema(fixture.pool, schema);
      const exists = async (): Promise<boolean> => {
        const { rows } = await fixture.pool.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [
          `"${schema}".hcp_events`,
        ]);
        return rows[0]!.t !== null;
      };
      expect(await exists()).toBe(true);

      await dropPostgresEventStoreSchema(fixture.pool, schema);
      await dropPostgresEventStoreSchema(fixture.pool, schema);

      expect(await exists()).toBe(false);
    } finally {
      await fixture.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it('rejects schema names it would have to quote', () => {
    expect(() => new PostgresEventStore({ pool: fixture.pool, schema: 'Robert"; DROP' })).toThrow(/schema name/);
  });

  it('returns positions and revisions as exact bigints', async () => {
    const stream = `${uniquePrefix()}vm`;
    const result = await fixture.store.append(stream, newEvents(2), 'no_stream');
    const read: RecordedEvent[] = await fixture.store.readStream(stream);

    expect(typeof result.position).toBe('bigint');
    expect(typeof result.nextExpectedRevision).toBe('bigint');
    expect(read.every((e) => typeof e.position === 'bigint' && typeof e.revision === 'bigint')).toBe(true);
    expectStrictlyIncreasing(read.map((e) => e.position));
  });
});
