import type { Pool, PoolClient, QueryResult } from 'pg';
import {
  START_POSITION,
  StreamBusyError,
  WrongExpectedRevisionError,
  type AppendManyOptions,
  type DecidedWrites,
  type AppendResult,
  type EventHandler,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type RecordedEvent,
  type SqlWrite,
  type StreamAppend,
  type StreamDecision,
  type StreamRead,
  type SubscribeOptions,
  type Subscription,
} from '../event-store.port';
import { assertStreamId } from '../stream-id';
import { assertStreamReads } from '../stream-reads';
import { sqlLiteral } from './sql-literal';
import { CommitNotifier } from './commit-notifier';
import { NotificationListener } from './notification-listener';
import { APPEND_GUARD_REFUSED, eventStoreNames, type EventStoreNames } from './postgres-event-store.schema';
import { CoalescedPageReads } from './coalesced-page-reads';
import { CoalescedStreamReads } from './coalesced-stream-reads';
import { CoalescedAppends } from './coalesced-appends';
import { type TailRead, TailWindow } from './tail-window';
import { combinedSqlWrites } from './combined-sql-writes';
import { prepared } from './prepared-statement';
import { PostgresSubscription, type SubscriptionPage } from './postgres-subscription';

export {
  dropPostgresEventStoreAppendGuard,
  dropPostgresEventStoreGuardIndexLookups,
  dropPostgresEventStoreSchema,
  installPostgresEventStoreAppendGuard,
  installPostgresEventStoreGuardIndexLookups,
  installPostgresEventStoreSchema,
  installPostgresEventStoreTable,
  type SqlRunner,
} from './postgres-event-store.schema';

export interface PostgresEventStoreOptions {
  /** Owned by the caller: close() leaves it open. */
  pool: Pool;
  /** Schema holding `hcp_events` (see installPostgresEventStoreSchema); default `public`. */
  schema?: string;
  /** Fallback poll for subscriptions when a NOTIFY is missed; default 500 ms. */
  pollIntervalMs?: number;
  /** How long a subscription retries failing reads before it gives up and calls onError; default 30 s. */
  subscriptionRetryMs?: number;
  /** The newest events kept for the live subscriptions (TailWindow); default 2,000, a few MB. */
  tailWindowEvents?: number;
}

const PAGE_SIZE = 500;
const TAIL_WINDOW_EVENTS = 4 * PAGE_SIZE;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UNIQUE_VIOLATION = '23505';

/*
 * Every bigint column is selected as text: pg returns int8 as a string by default, but a process-wide
 * type parser (pg.types) could turn it into a lossy number, and these values must stay exact.
 */
const EVENT_COLUMNS = `position::text AS position, stream_id, revision::text AS revision, event_id::text AS event_id,
  type, data, metadata, recorded_at`;

/** Readers stay strictly below the oldest transaction still in flight anywhere in the cluster. */
const safeToRead = (alias: string): string => `${alias}.tx_id < pg_snapshot_xmin(pg_current_snapshot())`;

interface EventRow {
  position: string;
  stream_id: string;
  revision: string;
  event_id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  recorded_at: Date;
}

interface PageRow extends Omit<EventRow, 'position' | 'data' | 'metadata'> {
  head: string | null;
  position: string | null;
  matches: boolean | null;
  data: Record<string, unknown> | null;
  metadata: EventMetadata | null;
}

interface StreamsState {
  /** No transaction id assigned yet: the ordering argument in append() depends on it. */
  fresh: boolean;
  /** The last revision and position of each stream, in the order of the appends. */
  streams: { revision: string | null; position: string | null }[];
  /** Already stored events that carry one of the ids being appended. */
  existing: StoredId[];
}

interface StoredId {
  id: string;
  stream: string;
  revision: string;
  position: string;
}

/**
 * The embedded event store: one table, `hcp_events`, ordered by an identity `position`.
 *
 * Subscriptions must never skip an event whose transaction commits after a later position became
 * visible. Two things together guarantee it:
 * - readers only return rows whose writer's transaction id is below the snapshot's xmin, so every row
 *   they can see belongs to a finished transaction, and no unfinished transaction has a smaller id;
 * - appends assign their transaction id and draw their positions inside one short, store-wide critical
 *   section (a session advisory lock held for the INSERT only, not until COMMIT), so that transaction id
 *   order and position order agree. Without it, a writer could get an older id, be overtaken, draw a
 *   larger position and commit first while the younger writer with the smaller position is still open:
 *   its rows would pass the xmin test while the smaller position is still invisible.
 * Commits still run concurrently; only position allocation is serialised (measured: no visible cost).
 *
 * Subscribers wake on a NOTIFY sent right after each commit (see CommitNotifier for why it is not sent
 * inside the append transaction) and poll as a fallback.
 */
export class PostgresEventStore implements EventStore {
  private readonly pool: Pool;
  private readonly names: EventStoreNames;
  private readonly pollIntervalMs: number;
  private readonly subscriptionRetryMs: number;
  private readonly listener: NotificationListener;
  private readonly notifier: CommitNotifier;
  private readonly subscriptions = new Set<PostgresSubscription>();
  private readonly pageReads = new CoalescedPageReads<PageRow>((after, prefixes) => this.readPageRows(after, prefixes));
  private readonly tail: TailWindow<RecordedEvent>;
  private readonly streamReads = new CoalescedStreamReads((wanted) => this.readWanted(wanted));
  private readonly coalescedAppends = new CoalescedAppends((calls) => this.appendCalls(calls));

  constructor(options: PostgresEventStoreOptions) {
    this.pool = options.pool;
    this.names = eventStoreNames(options.schema ?? 'public');
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.subscriptionRetryMs = options.subscriptionRetryMs ?? 30_000;
    this.listener = new NotificationListener(this.pool, this.names.channel);
    this.notifier = new CommitNotifier(this.pool, this.names.channel);
    this.tail = new TailWindow<RecordedEvent>({
      read: (after) => this.readTail(after),
      positionOf: (event) => event.position,
      wakeups: () => this.listener.wakeups,
      pageSize: PAGE_SIZE,
      maxItems: options.tailWindowEvents ?? TAIL_WINDOW_EVENTS,
    });
  }

  readonly commitsSqlWrites = true;

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMany([{ streamId, events, expected }]);
    return result!;
  }

  /**
   * One transaction for every stream (and the caller's SQL writes), in one round trip whatever the number
   * of streams (two when its guard refuses: guardedAppend). Calls
   * without SQL writes asked at about the same time share that transaction (CoalescedAppends), each
   * still committed whole or refused alone. A call with SQL writes commits alone: its writes may wait on
   * a row its caller holds in a transaction of its own, and no other call must wait with them.
   */
  async appendMany(appends: StreamAppend[], options: AppendManyOptions = {}): Promise<AppendResult[]> {
    for (const { streamId } of appends) assertStreamId(streamId);
    assertAppendable(appends);
    if (appends.length === 0) return [];
    const sqlWrites = options.sqlWrites ?? [];
    if (sqlWrites.length === 0) return this.coalescedAppends.append(appends);
    return guardedFirst((guarded) =>
      this.inAppendTransaction(
        async (client, allocation) =>
          onlyResult(await this.appendInTransaction(client, allocation, [appends], sqlWrites, { guarded })),
        () => appends,
      ),
    );
  }

  /**
   * The calls CoalescedAppends gathered, in one transaction. When that transaction fails as a whole (an
   * event id stored meanwhile in another stream, a connection lost), each call is tried again on its
   * own, so a failure reaches only the call it belongs to; a call that did commit is recognised then as
   * a retry and answered with its original result.
   */
  private async appendCalls(calls: StreamAppend[][]): Promise<Array<PromiseSettledResult<AppendResult[]>>> {
    const together = (group: StreamAppend[][]) =>
      guardedFirst((guarded) =>
        this.inAppendTransaction(
          (client, allocation) => this.appendInTransaction(client, allocation, group, [], { guarded }),
          () => group.flat(),
        ),
      );
    if (calls.length > 1) {
      try {
        return await together(calls);
      } catch {
        // Fall through: one transaction per call.
      }
    }
    return Promise.all(
      calls.map((call) =>
        together([call]).then(
          ([result]) => result!,
          (reason: unknown): PromiseRejectedResult => ({ status: 'rejected', reason }),
        ),
      ),
    );
  }

  /**
   * Two round trips: the stream's lock and its events; the other streams' locks (tried: one held
   * elsewhere fails the call rather than wait while this one holds a lock) under the guard, the insert,
   * the writes and the commit. When the guard refuses, the whole transaction runs again without it, in
   * three round trips, and `decide` is asked again on what that one reads.
   */
  async appendDecided(streamId: string, fromRevision: bigint, decide: StreamDecision): Promise<AppendResult[]> {
    assertStreamId(streamId);
    return guardedFirst((guarded) => this.decidedTransaction(streamId, fromRevision, decide, guarded));
  }

  private decidedTransaction(
    streamId: string,
    fromRevision: bigint,
    decide: StreamDecision,
    guarded: boolean,
  ): Promise<AppendResult[]> {
    let decided: DecidedWrites | null = null;
    return this.inAppendTransaction(
      async (client, allocation) => {
        const [, , read] = await runScript(client, [
          'BEGIN',
          `SELECT pg_advisory_xact_lock(hashtextextended(${sqlLiteral(this.names.streamLockKey(streamId))}, 0))`,
          `SELECT ${EVENT_COLUMNS} FROM ${this.names.table} e
           WHERE e.stream_id = ${sqlLiteral(streamId)} AND e.revision >= ${sqlLiteral(fromRevision.toString())}::bigint
           ORDER BY e.revision`,
        ]);
        decided = decide((read!.rows as EventRow[]).map(toRecordedEvent));
        const appends = decided?.appends ?? [];
        for (const append of appends) assertStreamId(append.streamId);
        assertAppendable(appends);
        if (appends.length === 0) {
          await client.query('ROLLBACK');
          return [];
        }
        return onlyResult(
          await this.appendInTransaction(client, allocation, [appends], decided!.sqlWrites ?? [], {
            held: streamId,
            guarded,
          }),
        );
      },
      () => decided?.appends ?? [],
    );
  }

  /**
   * A pooled connection for one append transaction, given back (or destroyed when it broke); a unique
   * violation is reported as the WrongExpectedRevisionError of the stream it names.
   */
  private async inAppendTransaction<T>(
    work: (client: PoolClient, allocation: { locked: boolean }) => Promise<T>,
    appends: () => StreamAppend[],
  ): Promise<T> {
    const client = await this.pool.connect();
    // A connection the server drops while it is checked out (restart, failover, pg_terminate_backend)
    // emits 'error' on the client besides failing the running query; the pool listens only to idle
    // clients, and an 'error' event nobody listens to ends the process. The query's rejection carries the
    // failure to the caller; this only marks the client as one not to reuse.
    let lost: Error | undefined;
    const onLost = (err: Error) => {
      lost = err;
    };
    client.on('error', onLost);
    const allocation = { locked: false };
    let broken: Error | undefined;
    try {
      return await work(client, allocation);
    } catch (err) {
      broken = await this.abort(client, allocation.locked);
      if (isUniqueViolation(err)) {
        // Only a concurrent writer outside this store's locking, or an event id already used in another
        // stream, gets here; either way the caller's view of the stream is stale.
        const written = appends();
        const failed = written.find((a) => violatedStream(err) === a.streamId) ?? written[0]!;
        throw new WrongExpectedRevisionError(
          failed.streamId,
          failed.expected,
          await this.currentRevision(failed.streamId),
        );
      }
      throw err;
    } finally {
      // A lost client is destroyed, not pooled: it keeps the listener, since it may still report its end.
      if (!(broken ?? lost)) client.removeListener('error', onLost);
      client.release(broken ?? lost);
    }
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const fromRevision = options.fromRevision ?? 0n;
    if (options.maxCount === undefined) return this.streamReads.read(streamId, fromRevision);
    const { rows } = await this.pool.query<EventRow>(
      prepared(
        `SELECT ${EVENT_COLUMNS} FROM ${this.names.table} e
         WHERE e.stream_id = $1 AND e.revision >= $2::bigint ORDER BY e.revision LIMIT $3`,
        [streamId, fromRevision.toString(), options.maxCount],
      ),
    );
    return rows.map(toRecordedEvent);
  }

  /**
   * One statement for the whole batch: the requested streams as two arrays, each joined to its events on
   * the (stream_id, revision) key, so the cost is one round trip and one index range scan per stream.
   * The per-stream scan is a LATERAL subquery fenced by `OFFSET 0`, so the planner cannot turn it into a
   * hash join over the whole table: it chose one while the table had no statistics yet (a fresh
   * database, its first minute of writes), and a worker's read of 80 streams scanned every event,
   * 7.5 ms against 0.8 (bench/README.md, "the eleventh session").
   */
  async readStreams(reads: StreamRead[]): Promise<Map<string, RecordedEvent[]>> {
    assertStreamReads(reads);
    const answer = new Map<string, RecordedEvent[]>(reads.map(({ streamId }) => [streamId, []]));
    if (reads.length === 0) return answer;
    const events = await this.readWanted(new Map(reads.map((r) => [r.streamId, r.fromRevision ?? 0n])));
    for (const event of events) answer.get(event.streamId)!.push(event);
    return answer;
  }

  /** The events of each wanted stream from its revision on, ordered by stream and revision. */
  private async readWanted(wanted: ReadonlyMap<string, bigint>): Promise<RecordedEvent[]> {
    const { rows } =
      wanted.size === 1
        ? await this.pool.query<EventRow>(
            prepared(
              `SELECT ${EVENT_COLUMNS} FROM ${this.names.table} e
               WHERE e.stream_id = $1 AND e.revision >= $2::bigint ORDER BY e.revision`,
              [...wanted].flatMap(([streamId, from]) => [streamId, from.toString()]),
            ),
          )
        : await this.pool.query<EventRow>(
            prepared(
              `SELECT ${EVENT_COLUMNS}
               FROM unnest($1::text[], $2::bigint[]) AS wanted(wanted_stream, from_revision)
               CROSS JOIN LATERAL (
                 SELECT * FROM ${this.names.table} s
                 WHERE s.stream_id = wanted.wanted_stream AND s.revision >= wanted.from_revision
                 OFFSET 0
               ) e
               ORDER BY e.stream_id, e.revision`,
              [[...wanted.keys()], [...wanted.values()].map(String)],
            ),
          );
    return rows.map(toRecordedEvent);
  }

  async readAll(fromPosition: bigint | 'start', maxCount: number): Promise<RecordedEvent[]> {
    const after = fromPosition === 'start' ? START_POSITION : fromPosition;
    const { rows } = await this.pool.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM ${this.names.table} e
       WHERE e.position > $1::bigint AND ${safeToRead('e')} ORDER BY e.position LIMIT $2`,
      [after.toString(), maxCount],
    );
    return rows.map(toRecordedEvent);
  }

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    const from =
      options.fromPosition === undefined || options.fromPosition === 'start' ? START_POSITION : options.fromPosition;
    // An empty list is read like an omitted one (all streams) rather than as "nothing".
    const prefixes = options.streamPrefixes?.length ? options.streamPrefixes : null;
    const subscription = new PostgresSubscription({
      readPage: (after) => this.readSubscriptionPage(after, prefixes),
      listener: this.listener,
      prefixes,
      handler,
      from,
      pollIntervalMs: this.pollIntervalMs,
      retryBudgetMs: this.subscriptionRetryMs,
      onError: options.onError,
      onEnded: (ended) => this.subscriptions.delete(ended),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  async headPosition(): Promise<bigint> {
    const { rows } = await this.pool.query<{ head: string }>(
      `SELECT coalesce(max(position), -1)::text AS head FROM ${this.names.table}`,
    );
    return BigInt(rows[0]!.head);
  }

  /** Stops every subscription of this store; the pool belongs to the caller and stays open. */
  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    await this.notifier.flushed();
  }

  /**
   * Appends the calls in the transaction `client` runs (begun here, or by appendDecided holding `held`):
   * one settled result per call. Planned (`guarded` false), each call is planned on the streams' state
   * read first, so a call whose expectation fails is refused alone and the others commit; when every call
   * is refused or has nothing new, it rolls back. Guarded, there is no read: guardedAppend's guard checks
   * in the script that inserts, which is then the transaction's only round trip.
   */
  private async appendInTransaction(
    client: PoolClient,
    allocation: { locked: boolean },
    calls: StreamAppend[][],
    sqlWrites: SqlWrite[],
    options: {
      /** The stream whose lock this transaction (begun already) holds: appendDecided's. */
      held?: string;
      guarded: boolean;
    },
  ): Promise<Array<PromiseSettledResult<AppendResult[]>>> {
    const { held } = options;
    const { table, streamLockKey, allocationLockKey } = this.names;
    const appends = calls.flat();
    // Every writer takes its stream locks in one global order (sorted keys), so writers to overlapping
    // streams queue behind each other instead of deadlocking. One that holds a lock out of that order
    // (appendDecided) only tries the others: waiting there could close a cycle.
    const others = appends.filter((a) => a.streamId !== held);
    const lockKeys = others.map((a) => streamLockKey(a.streamId)).sort();
    const lock = held ? 'pg_try_advisory_xact_lock' : 'pg_advisory_xact_lock';
    const guarded = options.guarded ? guardedAppend(this.names.appendGuard, lock, lockKeys, calls) : null;

    let opening: string[];
    let plans: Array<PromiseSettledResult<Planned[]>>;
    if (guarded !== null) {
      opening = [...(held ? [] : ['BEGIN']), guarded.guard];
      plans = guarded.plans;
    } else {
      opening = [];
      // Each script is one round trip; every statement in it still gets its own snapshot (READ COMMITTED),
      // so the state read sees whatever the previous holder of a stream lock committed.
      const results = await runScript(client, [
        ...(held ? [] : ['BEGIN']),
        // Appenders to one stream take turns, so the revisions read below are still true at INSERT time.
        ...(lockKeys.length > 0 ? [streamLocksSql(lock, lockKeys)] : []),
        streamsStateSql(table, appends),
      ]);
      if (held && lockKeys.length > 0) {
        const busy = results.at(-2)!.rows.findIndex((r: { locked: boolean }) => r.locked === false);
        if (busy >= 0)
          throw new StreamBusyError(others.find((a) => streamLockKey(a.streamId) === lockKeys[busy])!.streamId);
      }
      const state = results.at(-1)!.rows[0] as StreamsState;
      if (!state.fresh) throw new Error('append transaction was assigned a transaction id before allocation');
      let first = 0;
      plans = calls.map((call) => {
        const streams = state.streams.slice(first, first + call.length);
        first += call.length;
        return planCall(call, streams, state.existing);
      });
    }

    const inserts = insertsOf(calls, plans);
    if (inserts.length === 0) {
      // Nothing new: retries of committed appends (whose SQL writes committed with them), empty appends,
      // or calls refused.
      await client.query('ROLLBACK');
      return plans.map((plan, c) => resultOf(calls[c]!, plan, {}));
    }

    const allocationLock = `hashtextextended(${sqlLiteral(allocationLockKey)}, 0)`;
    // Set before sending: if the script fails anywhere, abort() must assume the lock may be held.
    allocation.locked = true;
    let results: QueryResult[];
    try {
      results = await runScript(client, [
        ...opening,
        `SELECT pg_advisory_lock(${allocationLock})`,
        // The unlock sits after the aggregate over every inserted row, so it runs once the INSERT is done,
        // and before COMMIT: the critical section never waits for a WAL flush.
        `WITH appended AS (
           INSERT INTO ${table} (stream_id, revision, event_id, type, data, metadata)
           SELECT e.event->>'stream', (e.event->>'revision')::bigint, (e.event->>'id')::uuid,
                  e.event->>'type', e.event->'data', e.event->'metadata'
           FROM jsonb_array_elements(${sqlLiteral(JSON.stringify(inserts))}::jsonb) WITH ORDINALITY AS e(event, ord)
           ORDER BY e.ord
           RETURNING stream_id, position, revision
         ), per_stream AS (
           SELECT stream_id, max(position) AS position, max(revision) AS revision FROM appended GROUP BY stream_id
         )
         SELECT json_object_agg(stream_id, json_build_object('position', position::text, 'revision', revision::text))
                  AS streams,
                pg_advisory_unlock(${allocationLock}) AS unlocked
         FROM per_stream`,
        // The caller's writes come after the allocation: their transaction id is assigned by then.
        ...combinedSqlWrites(sqlWrites).map(inlined),
        'COMMIT',
      ]);
    } catch (err) {
      if (guarded !== null && isGuardRefusal(err)) {
        // The guard runs before the allocation lock is asked for: the script stopped there.
        allocation.locked = false;
        throw new GuardRefused();
      }
      throw err;
    }
    allocation.locked = false;
    const written = results[opening.length + 1]!.rows[0].streams as WrittenStreams;
    for (const { streamId } of appends) if (written[streamId]) this.notifier.committed(streamId);
    for (const { notifies } of sqlWrites) if (notifies) this.notifier.wake(notifies);
    return plans.map((plan, c) => resultOf(calls[c]!, plan, written));
  }

  /** Rolls back and frees the allocation lock; returns an error when the connection must not be reused. */
  private async abort(client: PoolClient, allocationLocked: boolean): Promise<Error | undefined> {
    try {
      await client.query('ROLLBACK');
      // Session locks survive a rollback; leaving it would stall every appender of this store.
      if (allocationLocked) {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [this.names.allocationLockKey]);
      }
      return undefined;
    } catch (err) {
      // Destroying the connection also ends its session and with it any lock it still holds.
      return err instanceof Error ? err : new Error(String(err));
    }
  }

  private async currentRevision(streamId: string): Promise<bigint | 'no_stream'> {
    const { rows } = await this.pool.query<{ revision: string | null }>(
      `SELECT max(revision)::text AS revision FROM ${this.names.table} WHERE stream_id = $1`,
      [streamId],
    );
    const revision = rows[0]?.revision ?? null;
    return revision === null ? 'no_stream' : BigInt(revision);
  }

  private async readSubscriptionPage(after: bigint, prefixes: string[] | null): Promise<SubscriptionPage> {
    const wakeup = this.listener.wakeups;
    const ours = (streamId: string): boolean =>
      prefixes === null || prefixes.some((prefix) => streamId.startsWith(prefix));
    const fromWindow = await this.tail.page(after, wakeup);
    if (fromWindow) {
      const { items, ...page } = fromWindow;
      return { ...page, events: items.filter((event) => ours(event.streamId)) };
    }
    // Behind the window (catching up), or before it has started: a read of its own, shared with the
    // subscriptions woken alongside this one at the same position (CoalescedPageReads). Rows matching
    // their prefixes but not this one's are filtered out here, as the statement does for rows matching none.
    const rows = await this.pageReads.read(after, wakeup, prefixes);
    const page = subscriptionPageOf(rows, after);
    const events = page.events.filter((event) => ours(event.streamId));
    if (!page.full) this.tail.reachedTail(page.scannedTo ?? after, wakeup);
    return { ...page, events };
  }

  /** The tail of the table for the window: every stream, payload and all. */
  private async readTail(after: bigint): Promise<TailRead<RecordedEvent>> {
    const { events, scannedTo, full, head } = subscriptionPageOf(await this.readPageRows(after, null), after);
    return { items: events, scannedTo, full, head };
  }

  private async readPageRows(after: bigint, prefixes: string[] | null): Promise<PageRow[]> {
    const { table } = this.names;
    // One statement, one snapshot: the head and the page agree, so "head beyond the page" really means
    // committed rows that are not safe to read yet. Filtered-out rows come back without their payload so
    // the cursor can move past them.
    const { rows } = await this.pool.query<PageRow>(
      prepared(
        `SELECT head.max_position::text AS head,
              s.position::text AS position, s.stream_id, s.revision::text AS revision, s.event_id::text AS event_id,
              s.type, s.recorded_at, s.matches,
              CASE WHEN s.matches THEN s.data END AS data,
              CASE WHEN s.matches THEN s.metadata END AS metadata
       FROM (SELECT max(position) AS max_position FROM ${table}) AS head
       LEFT JOIN LATERAL (
         SELECT e.position, e.stream_id, e.revision, e.event_id, e.type, e.data, e.metadata, e.recorded_at,
                ($3::text[] IS NULL OR EXISTS (
                  SELECT 1 FROM unnest($3::text[]) AS p(prefix) WHERE starts_with(e.stream_id, p.prefix))) AS matches
         FROM ${table} e
         WHERE e.position > $1::bigint AND ${safeToRead('e')}
         ORDER BY e.position
         LIMIT $2
       ) AS s ON true
       ORDER BY s.position`,
        [after.toString(), PAGE_SIZE, prefixes],
      ),
    );
    return rows;
  }
}

/** A page read's rows as events (those matching its prefixes), how far it scanned, and the head it saw. */
function subscriptionPageOf(rows: PageRow[], after: bigint): SubscriptionPage & { head: bigint } {
  const scanned = rows.filter((row): row is PageRow & { position: string } => row.position !== null);
  const last = scanned.at(-1);
  const scannedTo = last ? BigInt(last.position) : undefined;
  const head = rows[0]?.head == null ? START_POSITION : BigInt(rows[0].head);
  const full = scanned.length === PAGE_SIZE;
  return {
    events: scanned
      .filter((row) => row.matches === true)
      .map((row) => toRecordedEvent({ ...row, data: row.data ?? {}, metadata: row.metadata ?? {} })),
    scannedTo,
    full,
    blocked: !full && head > (scannedTo ?? after),
    head,
  };
}

/**
 * The stream locks as one statement, a row per key in the keys' order (`locked`: false where a try
 * failed). PostgreSQL evaluates volatile functions of the select list after the ORDER BY's sort, so the
 * locks are taken one by one in that order, as separate statements would take them; one statement costs
 * the server one parse, plan and result instead of one per stream (three per create in a group commit).
 */
function streamLocksSql(lock: 'pg_advisory_xact_lock' | 'pg_try_advisory_xact_lock', keys: string[]): string {
  return `SELECT ${lock}(hashtextextended(k.key, 0)) AS locked
          FROM unnest(ARRAY[${keys.map(sqlLiteral).join(', ')}]::text[]) WITH ORDINALITY AS k(key, ord)
          ORDER BY k.ord`;
}

/** The guard refused an append transaction (guardedAppend): nothing was written, run it again planned. */
class GuardRefused extends Error {
  constructor() {
    super('the append guard refused; the append runs again planned');
    this.name = 'GuardRefused';
  }
}

function isGuardRefusal(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === APPEND_GUARD_REFUSED;
}

/** Runs an append transaction guarded and, when its guard refuses, once more planned. */
async function guardedFirst<T>(transaction: (guarded: boolean) => Promise<T>): Promise<T> {
  try {
    return await transaction(true);
  } catch (err) {
    if (!(err instanceof GuardRefused)) throw err;
    return transaction(false);
  }
}

/**
 * The guard that lets an append skip the round trip of its state read, and the plans it lets the append
 * assume. Almost every append of HCP is new events where their stream's writer expects them, so the read
 * would only confirm what the appends already say. The guard goes in the inserting script, ahead of the
 * allocation lock: the schema's guard function (installPostgresEventStoreAppendGuard) takes the stream
 * locks and checks what the planned path's read would. When it refuses, the script ends before it writes,
 * and the transaction runs again planned, which tells a retry, a refusal and a busy stream apart exactly.
 *
 * Null for appends that need the read: an expectation of 'any', or an append without events (answered
 * with its stream's position).
 */
function guardedAppend(
  appendGuard: string,
  lock: 'pg_advisory_xact_lock' | 'pg_try_advisory_xact_lock',
  lockKeys: string[],
  calls: StreamAppend[][],
): { guard: string; plans: Array<PromiseSettledResult<Planned[]>> } | null {
  const appends = calls.flat();
  if (appends.some((a) => a.events.length === 0)) return null;
  const expected: bigint[] = [];
  for (const append of appends) {
    if (append.expected === 'any') return null;
    expected.push(append.expected === 'no_stream' ? -1n : append.expected);
  }
  let first = 0;
  const plans = calls.map((call): PromiseSettledResult<Planned[]> => {
    const planned = expected.slice(first, first + call.length).map((revision) => ({ firstRevision: revision + 1n }));
    first += call.length;
    return { status: 'fulfilled', value: planned };
  });
  const texts = (values: string[]) => `ARRAY[${values.map(sqlLiteral).join(', ')}]`;
  const guard = `SELECT ${appendGuard}(
    ${texts(appends.map((a) => a.streamId))}::text[],
    ARRAY[${expected.join(', ')}]::bigint[],
    ${texts(appends.flatMap((a) => a.events.map((e) => e.id)))}::uuid[],
    ${texts(lockKeys)}::text[],
    ${lock === 'pg_try_advisory_xact_lock'})`;
  return { guard, plans };
}

/** Ids are validated UUIDs and every string goes through sqlLiteral, so the script needs no parameters. */
function streamsStateSql(table: string, appends: StreamAppend[]): string {
  const allIds = appends.flatMap((a) => a.events.map((e) => sqlLiteral(e.id)));
  const ids = `ARRAY[${allIds.join(', ')}]::uuid[]`;
  const streams = `ARRAY[${appends.map((a) => sqlLiteral(a.streamId)).join(', ')}]::text[]`;
  return `SELECT pg_current_xact_id_if_assigned() IS NULL AS fresh,
            (SELECT json_agg(json_build_object('revision', last.revision::text, 'position', last.position::text)
                      ORDER BY s.ord)
               FROM unnest(${streams}) WITH ORDINALITY AS s(stream_id, ord)
               LEFT JOIN LATERAL (
                 SELECT revision, position FROM ${table} WHERE stream_id = s.stream_id ORDER BY revision DESC LIMIT 1
               ) AS last ON true) AS streams,
            (SELECT coalesce(json_agg(json_build_object(
                      'id', x.event_id, 'stream', x.stream_id, 'revision', x.revision::text, 'position', x.position::text)
                    ORDER BY x.position), '[]'::json)
               FROM ${table} x WHERE x.event_id = ANY(${ids})) AS existing`;
}

type Planned = { result: AppendResult } | { firstRevision: bigint };

/** Each stream an insert wrote, with its last row's position and revision. */
type WrittenStreams = Record<string, { position: string; revision: string }>;

/** What one stream of an appendMany needs: nothing (a retry, or no events) or its events from a revision on. */
function planAppend(
  { streamId, events, expected }: StreamAppend,
  stream: StreamsState['streams'][number],
  stored: StoredId[],
): Planned {
  const actual = stream.revision === null ? 'no_stream' : BigInt(stream.revision);
  const mine = new Set(events.map((e) => e.id.toLowerCase()));
  const existing = stored.filter((x) => mine.has(x.id));
  if (existing.length > 0) {
    const original = retriedAppend(streamId, events, expected, existing);
    if (!original) throw new WrongExpectedRevisionError(streamId, expected, actual);
    return { result: original };
  }
  if (!expectationHolds(expected, actual)) throw new WrongExpectedRevisionError(streamId, expected, actual);
  if (events.length === 0) {
    return {
      result: { nextExpectedRevision: actual === 'no_stream' ? -1n : actual, position: BigInt(stream.position ?? -1) },
    };
  }
  return { firstRevision: actual === 'no_stream' ? 0n : actual + 1n };
}

/** The rows the planned calls insert, in the calls' order. */
function insertsOf(calls: StreamAppend[][], plans: Array<PromiseSettledResult<Planned[]>>) {
  return calls.flatMap((call, c) => {
    const plan = plans[c]!;
    if (plan.status === 'rejected') return [];
    return call.flatMap((append, i) => {
      const outcome = plan.value[i]!;
      if (!('firstRevision' in outcome)) return [];
      return append.events.map((e, n) => ({
        stream: append.streamId,
        revision: (outcome.firstRevision + BigInt(n)).toString(),
        id: e.id,
        type: e.type,
        data: e.data,
        metadata: e.metadata ?? {},
      }));
    });
  });
}

/** A call's plan: every stream of it planned, or the call refused as a whole (its expectation failed). */
function planCall(
  call: StreamAppend[],
  streams: StreamsState['streams'],
  stored: StoredId[],
): PromiseSettledResult<Planned[]> {
  try {
    return { status: 'fulfilled', value: call.map((append, i) => planAppend(append, streams[i]!, stored)) };
  } catch (reason) {
    if (!(reason instanceof WrongExpectedRevisionError)) throw reason;
    return { status: 'rejected', reason };
  }
}

/** A call's results once its transaction committed (`written`: each inserted stream's last row). */
function resultOf(
  call: StreamAppend[],
  plan: PromiseSettledResult<Planned[]>,
  written: WrittenStreams,
): PromiseSettledResult<AppendResult[]> {
  if (plan.status === 'rejected') return plan;
  return {
    status: 'fulfilled',
    value: plan.value.map((outcome, i) => {
      if ('result' in outcome) return outcome.result;
      const row = written[call[i]!.streamId] ?? unreachable();
      return { nextExpectedRevision: BigInt(row.revision), position: BigInt(row.position) };
    }),
  };
}

/** The one call's results, or its refusal thrown. */
function onlyResult([result]: Array<PromiseSettledResult<AppendResult[]>>): AppendResult[] {
  if (result?.status !== 'fulfilled') throw result ? result.reason : new Error('an append got no result');
  return result.value;
}

/** The caller's statement with its parameters as escaped literals, so it joins the script's round trip. */
function inlined({ sql, params }: SqlWrite): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index < 0 || index >= params.length) throw new TypeError(`SQL write refers to $${n}, which has no parameter`);
    const value = params[index];
    return value === null || value === undefined ? 'NULL' : sqlLiteral(value);
  });
}

/** The stream named by a (stream_id, revision) unique violation, if that is the one. */
function violatedStream(err: unknown): string | undefined {
  const detail = (err as { detail?: unknown }).detail;
  if (typeof detail !== 'string') return undefined;
  return /^Key \(stream_id, revision\)=\((.*), \d+\) already exists/.exec(detail)?.[1];
}

function unreachable(): never {
  throw new Error('unreachable: a planned insert without rows');
}

/**
 * Sends several statements in one simple-protocol message: one round trip instead of one per statement.
 * Execution stops at the first failing statement, which then rejects the whole call.
 */
async function runScript(client: PoolClient, statements: string[]): Promise<QueryResult[]> {
  // pg resolves a multi-statement text to one result per statement, which its typings do not express.
  const result = (await client.query(statements.join(';\n'))) as QueryResult | QueryResult[];
  return Array.isArray(result) ? result : [result];
}

function assertAppendable(appends: StreamAppend[]): void {
  const streams = new Set<string>();
  const seen = new Set<string>();
  for (const { streamId } of appends) {
    if (streams.has(streamId)) throw new TypeError(`stream ${streamId} appears twice in one appendMany`);
    streams.add(streamId);
  }
  for (const event of appends.flatMap((a) => a.events)) {
    if (!UUID.test(event.id)) throw new TypeError(`event id ${JSON.stringify(event.id)} is not a UUID`);
    const id = event.id.toLowerCase();
    if (seen.has(id)) throw new TypeError(`event id ${id} appears twice in one append`);
    seen.add(id);
  }
}

function expectationHolds(expected: ExpectedRevision, actual: bigint | 'no_stream'): boolean {
  if (expected === 'any') return true;
  return expected === actual;
}

/**
 * Recognises a retried append: the same ids, already stored in this stream, consecutively and in the same
 * order, at the place the expectation pointed to. As with EventStoreDB, the original result is returned.
 */
function retriedAppend(
  streamId: string,
  events: NewEvent[],
  expected: ExpectedRevision,
  existing: StoredId[],
): AppendResult | undefined {
  if (existing.length !== events.length) return undefined;
  const first = BigInt(existing[0]!.revision);
  const sameEvents = existing.every(
    (stored, i) =>
      stored.stream === streamId &&
      stored.id === events[i]!.id.toLowerCase() &&
      BigInt(stored.revision) === first + BigInt(i),
  );
  const expectedFirst = expected === 'no_stream' ? 0n : expected === 'any' ? first : expected + 1n;
  if (!sameEvents || first !== expectedFirst) return undefined;
  const last = existing.at(-1)!;
  return { nextExpectedRevision: BigInt(last.revision), position: BigInt(last.position) };
}

/** A unique violation of the event table's own keys; one in the caller's SQL writes stays the caller's error. */
function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  return code === UNIQUE_VIOLATION && (constraint === undefined || EVENT_KEYS.has(String(constraint)));
}

const EVENT_KEYS = new Set(['hcp_events_event_id_key', 'hcp_events_stream_revision_key']);

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    type: row.type,
    revision: BigInt(row.revision),
    position: BigInt(row.position),
    data: row.data,
    metadata: row.metadata,
    recordedAt: row.recorded_at,
  };
}
