/**
 * The event store port. HCP's write side and every subscription go through this interface only; the
 * adapters (PostgreSQL, EventStoreDB) pass one contract suite (test/integration/eventstore).
 */

/** An event about to be written. `id` makes retried appends recognisable (EventStoreDB de-duplicates on it). */
export interface NewEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata?: EventMetadata;
}

export interface EventMetadata {
  /** Version of the event's schema; upcasters lift older versions when read. */
  schema_version?: number;
  trace_id?: string;
  actor?: string;
  [key: string]: unknown;
}

export interface RecordedEvent {
  id: string;
  streamId: string;
  type: string;
  /** 0-based revision of this event inside its stream. */
  revision: bigint;
  /** Position in the global order of all events; strictly increasing in subscription order. */
  position: bigint;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  recordedAt: Date;
}

/**
 * What the writer expects the stream to be before the append.
 * - `no_stream`: the stream must not exist yet;
 * - `any`: no check;
 * - a bigint: the revision of the last event in the stream (0-based).
 */
export type ExpectedRevision = 'no_stream' | 'any' | bigint;

export interface AppendResult {
  /** Revision of the last appended event. */
  nextExpectedRevision: bigint;
  /** Global position of the last appended event. */
  position: bigint;
}

/** One stream's part of an appendMany. */
export interface StreamAppend {
  streamId: string;
  events: NewEvent[];
  expected: ExpectedRevision;
}

/**
 * A write of the caller's own tables, committed with the events by a store that keeps them in the same
 * database (see `EventStore.commitsSqlWrites`). `params` are bound to `$1`, `$2`, ... of `sql`; the store
 * decides how (it may inline them as escaped literals to save a round trip), so they are text or null.
 */
export interface SqlWrite {
  sql: string;
  params: ReadonlyArray<string | null>;
  /**
   * A channel to NOTIFY once the write has committed, for whoever waits on what it wrote. Sent after the
   * commit, with the store's own wake-up of its subscribers, never inside the transaction.
   */
  notifies?: string;
  /**
   * The rows this write adds, when writes of its kind commute (each adds its own rows, whatever the
   * others add): a commit then sends the writes of one `kind` as the one write `of(all their items)`,
   * where the first of them stood. A group commit of creates writes one job queue INSERT, not one each.
   */
  rows?: SqlWriteRows;
}

export interface SqlWriteRows {
  kind: string;
  items: readonly unknown[];
  of(items: readonly unknown[]): SqlWrite;
}

export interface AppendManyOptions {
  /**
   * Run after the events are inserted, before the commit: they commit or roll back with the events. Only
   * for a store whose `commitsSqlWrites` is true; any other refuses them (TypeError) rather than run them
   * outside the transaction.
   */
  sqlWrites?: SqlWrite[];
}

/** What a decision on a stream's newest events writes (see `EventStore.appendDecided`). */
export interface DecidedWrites {
  appends: StreamAppend[];
  sqlWrites?: SqlWrite[];
}

/** A decision on a stream's events read under its lock: the writes to commit, or null for none. */
export type StreamDecision = (recorded: RecordedEvent[]) => DecidedWrites | null;

export interface ReadStreamOptions {
  /** First revision to read (inclusive); default 0. */
  fromRevision?: bigint;
  maxCount?: number;
}

/** One stream of a readStreams. */
export interface StreamRead {
  streamId: string;
  /** First revision to read (inclusive); default 0. */
  fromRevision?: bigint;
}

export interface SubscribeOptions {
  /** Deliver events strictly after this position; `undefined` (or 'start') means from the beginning. */
  fromPosition?: bigint | 'start';
  /** Optional prefix filter on stream ids (e.g. 'vm-'); omitted means all user streams. */
  streamPrefixes?: string[];
  /** Called when the subscription fails for good (after the adapter's own reconnects). */
  onError?: (err: unknown) => void;
}

/**
 * A running subscription. The handler is awaited before the next event is delivered (back-pressure),
 * so a handler that writes a checkpoint with its rows sees events exactly in position order.
 */
export interface Subscription {
  stop(): Promise<void>;
}

export type EventHandler = (event: RecordedEvent) => Promise<void>;

export interface EventStore {
  /** Appends atomically; throws WrongExpectedRevisionError when `expected` does not hold. */
  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to several streams at once, one result per stream in the given order. Each stream's
   * expectation is checked as append() does (a WrongExpectedRevisionError names the failing stream), and
   * a stream whose events are already stored with the same ids where its expectation points is a retry:
   * its original result comes back and nothing is written twice. A stream may appear once only.
   *
   * Atomic where the store has multi-stream transactions (PostgreSQL, in-memory): all or nothing, and a
   * failed expectation writes nothing. EventStoreDB has none: it appends stream by stream in the given
   * order, so a failure (or crash) part-way leaves the streams before it written; callers order their
   * streams so that such a prefix is recoverable, and retry with the same event ids to finish it.
   */
  appendMany(appends: StreamAppend[], options?: AppendManyOptions): Promise<AppendResult[]>;
  /**
   * Optional: the writes `decide` makes of `streamId`'s events from `fromRevision` on, appended as
   * appendMany would, with no append to `streamId` by any writer of the store between the read and the
   * commit (PostgreSQL holds the stream's lock from before the read). So a hot stream's writers queue
   * instead of deciding on a state that is gone by the time they append, failing and deciding again.
   * `decide` runs on each read of the stream: once, unless the store reads again because its first
   * transaction could not commit the writes as decided (PostgreSQL's guarded commit refused: another
   * stream of the writes busy or not where they expect it); only the last answer's writes are committed.
   * Null or no appends writes nothing and answers []. Another stream of the writes that a concurrent
   * writer holds at that moment fails the call with StreamBusyError, nothing written.
   * A store without it leaves the caller to read, decide and appendMany (optimistic concurrency).
   */
  appendDecided?(streamId: string, fromRevision: bigint, decide: StreamDecision): Promise<AppendResult[]>;
  /** Whether appendMany accepts `sqlWrites`: the events live in the database the caller's tables are in. */
  readonly commitsSqlWrites: boolean;
  /** Reads a stream in revision order; an absent stream reads as []. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /**
   * Reads several streams at once, as readStream would read each: the answer has every requested stream,
   * its events in revision order from its `fromRevision` on, and [] for an absent one. A stream may appear
   * once only (TypeError otherwise). Stores that can read many streams in one statement do (PostgreSQL);
   * the others read stream by stream. No snapshot across streams is promised.
   */
  readStreams(reads: StreamRead[]): Promise<Map<string, RecordedEvent[]>>;
  /** Reads all user events after `fromPosition` in global order, at most `maxCount` (a catch-up page). */
  readAll(fromPosition: bigint | 'start', maxCount: number): Promise<RecordedEvent[]>;
  /** Catch-up then live subscription to all user events. Never skips a committed event. */
  subscribeToAll(handler: EventHandler, options?: SubscribeOptions): Subscription;
  /** Position of the last event in the store ('start' position is -1n). */
  headPosition(): Promise<bigint>;
  close(): Promise<void>;
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/** A stream of an appendDecided's writes was held by another writer: nothing was written; decide again. */
export class StreamBusyError extends Error {
  constructor(readonly streamId: string) {
    super(`stream ${streamId} is being appended to by another writer`);
    this.name = 'StreamBusyError';
  }
}

export const START_POSITION = -1n;
