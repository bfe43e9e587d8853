import {
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AllStreamSubscription,
  type Filter,
  type Position,
  type ReadPosition,
} from '@eventstore/db-client';
import {
  START_POSITION,
  WrongExpectedRevisionError,
  type AppendManyOptions,
  type AppendResult,
  type EventHandler,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type StreamRead,
  type SubscribeOptions,
  type Subscription,
} from '../event-store.port';
import { assertStreamId } from '../stream-id';
import { assertStreamReads } from '../stream-reads';

export type EventStoreDbEventStoreOptions = (
  | { connectionString: string }
  /** A client owned by the caller: close() leaves it open. */
  | { client: EventStoreDBClient }
) & {
  /** How long a subscription retries a dropped connection before it gives up and calls onError; default 30 s. */
  subscriptionRetryMs?: number;
};

/*
 * Positions. The port has one bigint per event; EventStoreDB has {commit, prepare}. For events written by
 * ordinary appends (no explicit transactions, which the gRPC API no longer offers) every event is its own
 * log record and commit === prepare, and commit positions strictly increase along $all. So the commit
 * position is the port's position, and `{ commit: p, prepare: p }` is handed back to the client to resume.
 * Requires a server that reports positions on reads and appends (22.6 or later).
 */
const toPosition = (position: bigint): Position => ({ commit: position, prepare: position });

const READ_PAGE = 500;
/** Stream reads of one readStreams in flight at once (gRPC calls on one connection). */
const READ_STREAMS_CONCURRENCY = 16;
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 2_000;

/** Shape shared by every recorded event the client returns (JSON or binary, stream or $all read). */
interface EsdbRecordedEvent {
  id: string;
  streamId: string;
  type: string;
  revision: bigint;
  created: Date;
  isJson: boolean;
  data: unknown;
  metadata: unknown;
  position?: Position;
}

export class EventStoreDbEventStore implements EventStore {
  private readonly client: EventStoreDBClient;
  private readonly ownsClient: boolean;
  private readonly subscriptionRetryMs: number;
  private readonly subscriptions = new Set<EventStoreDbSubscription>();

  constructor(options: EventStoreDbEventStoreOptions) {
    if ('client' in options) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      this.client = EventStoreDBClient.connectionString(options.connectionString);
      this.ownsClient = true;
    }
    this.subscriptionRetryMs = options.subscriptionRetryMs ?? 30_000;
  }

  readonly commitsSqlWrites = false;

  /**
   * EventStoreDB has no transaction across streams: the streams are appended one after the other, in the
   * given order, each with its own expectation and event ids. A failure part-way (a wrong expectation, a
   * lost connection, a crash) leaves the streams before it written and the rest not. Retrying the same
   * appendMany with the same event ids finishes it: the server recognises the written streams' events by
   * their ids and answers their original results, and the rest are appended. A caller that cannot retry
   * (it crashed) relies on recovery that works from the first streams alone; HCP's create, for instance,
   * orders quota, VM, job, request record, and the VM job dispatcher derives a missing job from the VM's
   * event.
   */
  async appendMany(appends: StreamAppend[], options: AppendManyOptions = {}): Promise<AppendResult[]> {
    if (options.sqlWrites?.length) throw new TypeError('the EventStoreDB event store cannot commit SQL writes');
    if (new Set(appends.map((a) => a.streamId)).size !== appends.length)
      throw new TypeError('a stream appears twice in one appendMany');
    for (const { streamId } of appends) assertStreamId(streamId);
    const results: AppendResult[] = [];
    for (const { streamId, events, expected } of appends) results.push(await this.append(streamId, events, expected));
    return results;
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    assertStreamId(streamId);
    try {
      const result = await this.client.appendToStream(
        streamId,
        events.map((event) =>
          jsonEvent({ id: event.id, type: event.type, data: event.data, metadata: event.metadata ?? {} }),
        ),
        // The port's 'no_stream' | 'any' | bigint are the client's own NO_STREAM | ANY | revision values.
        // A retried append with the same ids and expectation is de-duplicated by the server itself.
        { expectedRevision: expected },
      );
      if (!result.position && events.length > 0) {
        throw new Error(
          `EventStoreDB did not report a position for the append to ${streamId} (server older than 22.6?)`,
        );
      }
      return { nextExpectedRevision: result.nextExpectedRevision, position: result.position?.commit ?? START_POSITION };
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        throw new WrongExpectedRevisionError(streamId, expected, err.actualVersion);
      }
      throw err;
    }
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    if (options.maxCount === 0) return [];
    const events: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(streamId, {
        direction: FORWARDS,
        fromRevision: options.fromRevision ?? START,
        ...(options.maxCount !== undefined && { maxCount: options.maxCount }),
      });
      for await (const resolved of read) {
        if (resolved.event) events.push(toRecordedEvent(resolved.event, resolved.commitPosition));
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    return events;
  }

  /** EventStoreDB has no multi-stream read: the streams are read one by one, a few at a time. */
  async readStreams(reads: StreamRead[]): Promise<Map<string, RecordedEvent[]>> {
    assertStreamReads(reads);
    const answer = new Map<string, RecordedEvent[]>(reads.map(({ streamId }) => [streamId, []]));
    let next = 0;
    const reader = async () => {
      while (next < reads.length) {
        const { streamId, fromRevision } = reads[next++]!;
        answer.set(streamId, await this.readStream(streamId, { fromRevision }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(READ_STREAMS_CONCURRENCY, reads.length) }, reader));
    return answer;
  }

  async readAll(fromPosition: bigint | 'start', maxCount: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    // $all reads are inclusive of their start and cannot be filtered server-side, so read pages and drop
    // what is at or before the cursor or is a system event.
    let cursor = fromPosition === 'start' ? START_POSITION : fromPosition;
    while (events.length < maxCount) {
      const from: ReadPosition = cursor === START_POSITION ? START : toPosition(cursor);
      let read = 0;
      for await (const resolved of this.client.readAll({
        direction: FORWARDS,
        fromPosition: from,
        maxCount: READ_PAGE,
      })) {
        read += 1;
        const event = resolved.event;
        if (!event || event.position.commit <= cursor) continue;
        cursor = event.position.commit;
        if (!isSystemEvent(event) && events.length < maxCount) events.push(toRecordedEvent(event));
      }
      if (read < READ_PAGE) break;
    }
    return events;
  }

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    const from =
      options.fromPosition === undefined || options.fromPosition === 'start' ? START_POSITION : options.fromPosition;
    const prefixes = options.streamPrefixes?.length ? options.streamPrefixes : undefined;
    const subscription = new EventStoreDbSubscription({
      client: this.client,
      handler,
      from,
      filter: prefixes ? streamNameFilter({ prefixes }) : excludeSystemEvents(),
      retryBudgetMs: this.subscriptionRetryMs,
      onError: options.onError,
      onEnded: (ended) => this.subscriptions.delete(ended),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  async headPosition(): Promise<bigint> {
    // The last user event, not the last record: subscriptions never deliver system events, so a
    // checkpoint could never reach a system event's position.
    let from: ReadPosition = END;
    for (;;) {
      let read = 0;
      let oldest: Position | undefined;
      for await (const resolved of this.client.readAll({
        direction: BACKWARDS,
        fromPosition: from,
        maxCount: READ_PAGE,
      })) {
        read += 1;
        const event = resolved.event;
        if (!event) continue;
        if (!isSystemEvent(event)) return event.position.commit;
        oldest = event.position;
      }
      if (read < READ_PAGE || !oldest) return START_POSITION;
      from = oldest;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    if (this.ownsClient) await this.client.dispose();
  }
}

interface EventStoreDbSubscriptionConfig {
  client: EventStoreDBClient;
  handler: EventHandler;
  from: bigint;
  filter: Filter;
  retryBudgetMs: number;
  onError?: (err: unknown) => void;
  onEnded(subscription: EventStoreDbSubscription): void;
}

/** Marks an error thrown by the handler, which ends the subscription at once instead of being retried. */
class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/**
 * Catch-up-then-live over the client's subscription, consumed with `for await` so that each event's
 * handler finishes before the next event is pulled. A dropped connection is resubscribed from the last
 * delivered position (with backoff, within the retry budget); a handler error ends the subscription.
 */
class EventStoreDbSubscription implements Subscription {
  private stopped = false;
  private current: AllStreamSubscription | undefined;
  private interruptSleep: (() => void) | undefined;
  private readonly done: Promise<void>;

  constructor(private readonly config: EventStoreDbSubscriptionConfig) {
    this.done = this.runToEnd();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.interruptSleep?.();
    await this.current?.unsubscribe().catch(ignore);
    await this.done;
  }

  private async runToEnd(): Promise<void> {
    let failure: { error: unknown } | undefined;
    try {
      await this.run();
    } catch (error) {
      failure = { error: error instanceof HandlerFailure ? error.error : error };
    } finally {
      this.config.onEnded(this);
    }
    if (failure && !this.stopped) {
      const onError =
        this.config.onError ??
        // Without an owner to tell, a stalled subscription must not go unnoticed: surface it as uncaught.
        ((err: unknown) => {
          throw err;
        });
      const { error } = failure;
      queueMicrotask(() => onError(error));
    }
  }

  private async run(): Promise<void> {
    const { client, handler, filter, retryBudgetMs } = this.config;
    let cursor = this.config.from;
    let failingSince: number | undefined;
    let retryMs = FIRST_RETRY_MS;

    while (!this.stopped) {
      const subscription = client.subscribeToAll({
        fromPosition: cursor === START_POSITION ? START : toPosition(cursor),
        filter,
      });
      this.current = subscription;
      let dropped: unknown;
      try {
        for await (const resolved of subscription) {
          if (this.stopped) break;
          const event = resolved.event;
          // Guards against an inclusive resume position; delivery must stay strictly increasing.
          if (!event || event.position.commit <= cursor) continue;
          try {
            await handler(toRecordedEvent(event));
          } catch (err) {
            throw new HandlerFailure(err);
          }
          cursor = event.position.commit;
          failingSince = undefined;
          retryMs = FIRST_RETRY_MS;
        }
        dropped = new Error('EventStoreDB ended the subscription');
      } catch (err) {
        if (err instanceof HandlerFailure) throw err;
        dropped = err;
      } finally {
        this.current = undefined;
        await subscription.unsubscribe().catch(ignore);
      }
      if (this.stopped) return;

      failingSince ??= Date.now();
      if (Date.now() - failingSince >= retryBudgetMs) throw dropped;
      await this.sleep(retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    }
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.interruptSleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.interruptSleep = done;
    });
  }
}

/** Mirrors excludeSystemEvents(): EventStoreDB's own events have types starting with '$'. */
function isSystemEvent(event: EsdbRecordedEvent): boolean {
  return event.type.startsWith('$');
}

function toRecordedEvent(event: EsdbRecordedEvent, commitPosition?: bigint): RecordedEvent {
  const position = event.position?.commit ?? commitPosition;
  if (position === undefined) {
    throw new Error(`EventStoreDB returned event ${event.id} without a position (server older than 22.6?)`);
  }
  return {
    id: event.id,
    streamId: event.streamId,
    type: event.type,
    revision: event.revision,
    position,
    data: dataObject(event),
    metadata: metadataObject(event.metadata),
    recordedAt: event.created,
  };
}

/** HCP writes JSON objects only; anything else in the store is a bug worth failing loudly on. */
function dataObject(event: EsdbRecordedEvent): Record<string, unknown> {
  const data = event.data instanceof Uint8Array ? parseJson(event.data) : event.data;
  if (isRecord(data)) return data;
  throw new Error(`event ${event.id} in ${event.streamId} does not carry a JSON object`);
}

/** Metadata is advisory (tracing, schema version); unreadable metadata degrades to none. */
function metadataObject(metadata: unknown): EventMetadata {
  const value = metadata instanceof Uint8Array ? parseJson(metadata) : metadata;
  return isRecord(value) ? value : {};
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function ignore(): void {}
