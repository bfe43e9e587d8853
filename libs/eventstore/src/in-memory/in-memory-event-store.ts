import {
  AppendManyOptions,
  AppendResult,
  EventHandler,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadStreamOptions,
  RecordedEvent,
  START_POSITION,
  StreamAppend,
  StreamDecision,
  StreamRead,
  SubscribeOptions,
  Subscription,
  WrongExpectedRevisionError,
} from '../event-store.port';
import { assertStreamId } from '../stream-id';
import { assertStreamReads } from '../stream-reads';

/**
 * The event store in process memory, for specs of the application layer: it passes the same contract
 * suite as the PostgreSQL and EventStoreDB adapters, so a handler tested on it behaves the same on them.
 * Event bodies go through JSON on the way in and out, as they do in a real store, so a spec cannot pass
 * by sharing objects with the store. Not for production: nothing survives the process.
 */
export class InMemoryEventStore implements EventStore {
  private readonly all: RecordedEvent[] = [];
  private readonly streams = new Map<string, RecordedEvent[]>();
  private readonly byId = new Map<string, RecordedEvent>();
  private readonly waiting = new Set<() => void>();
  readonly commitsSqlWrites = false;

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMany([{ streamId, events, expected }]);
    return result!;
  }

  /** Nothing else runs between the read, `decide` and the writes (one synchronous run). */
  async appendDecided(streamId: string, fromRevision: bigint, decide: StreamDecision): Promise<AppendResult[]> {
    assertStreamId(streamId);
    const decided = decide((this.streams.get(streamId) ?? []).slice(Number(fromRevision)).map(copy));
    if (!decided || decided.appends.length === 0) return [];
    return this.appendMany(decided.appends, { sqlWrites: decided.sqlWrites });
  }

  /** Checks every stream first and writes only when all hold: atomic, as nothing else runs in between. */
  async appendMany(appends: StreamAppend[], options: AppendManyOptions = {}): Promise<AppendResult[]> {
    if (options.sqlWrites?.length) throw new TypeError('the in-memory event store cannot commit SQL writes');
    assertDistinctStreams(appends);
    const planned = appends.map(({ streamId, events, expected }) => {
      assertStreamId(streamId);
      const stream = this.streams.get(streamId) ?? [];
      const actual = stream.length === 0 ? 'no_stream' : BigInt(stream.length - 1);
      const retried = this.retriedAppend(streamId, events, expected);
      if (retried) return { retried };
      if (events.some((e) => this.byId.has(e.id.toLowerCase())) || (expected !== 'any' && expected !== actual)) {
        throw new WrongExpectedRevisionError(streamId, expected, actual);
      }
      return { retried: undefined };
    });
    const ids = new Set<string>();
    for (const { events } of appends)
      for (const e of events) {
        const id = e.id.toLowerCase();
        if (ids.has(id)) throw new TypeError(`event id ${id} appears twice in one append`);
        ids.add(id);
      }
    const results = appends.map(({ streamId, events }, i) => planned[i]!.retried ?? this.write(streamId, events));
    for (const wake of [...this.waiting]) wake();
    return results;
  }

  private write(streamId: string, events: NewEvent[]): AppendResult {
    const stream = this.streams.get(streamId) ?? [];
    if (events.length === 0) {
      const last = stream.at(-1);
      return { nextExpectedRevision: last ? last.revision : -1n, position: this.head() };
    }
    const recordedAt = new Date();
    for (const event of events) {
      const recorded: RecordedEvent = {
        id: event.id.toLowerCase(),
        streamId,
        type: event.type,
        revision: BigInt(stream.length),
        position: BigInt(this.all.length),
        data: viaJson(event.data),
        metadata: viaJson(event.metadata ?? {}),
        recordedAt,
      };
      stream.push(recorded);
      this.all.push(recorded);
      this.byId.set(recorded.id, recorded);
    }
    this.streams.set(streamId, stream);
    const last = stream.at(-1)!;
    return { nextExpectedRevision: last.revision, position: last.position };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const from = Number(options.fromRevision ?? 0n);
    const stream = this.streams.get(streamId) ?? [];
    return stream.slice(from, options.maxCount === undefined ? undefined : from + options.maxCount).map(copy);
  }

  async readStreams(reads: StreamRead[]): Promise<Map<string, RecordedEvent[]>> {
    assertStreamReads(reads);
    const answer = new Map<string, RecordedEvent[]>();
    for (const { streamId, fromRevision } of reads)
      answer.set(streamId, (this.streams.get(streamId) ?? []).slice(Number(fromRevision ?? 0n)).map(copy));
    return answer;
  }

  async readAll(fromPosition: bigint | 'start', maxCount: number): Promise<RecordedEvent[]> {
    const from = fromPosition === 'start' ? 0 : Number(fromPosition) + 1;
    return this.all.slice(from, from + maxCount).map(copy);
  }

  subscribeToAll(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    let next =
      options.fromPosition === undefined || options.fromPosition === 'start' ? 0 : Number(options.fromPosition) + 1;
    let stopped = false;
    let wake: (() => void) | null = null;
    const matches = (event: RecordedEvent) =>
      !options.streamPrefixes || options.streamPrefixes.some((p) => event.streamId.startsWith(p));
    const loop = (async () => {
      while (!stopped) {
        if (next >= this.all.length) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            this.waiting.add(resolve);
          });
          this.waiting.delete(wake!);
          continue;
        }
        const event = this.all[next++]!;
        if (!matches(event)) continue;
        try {
          await handler(copy(event));
        } catch (err) {
          stopped = true;
          options.onError?.(err);
        }
      }
    })();
    return {
      stop: async () => {
        stopped = true;
        wake?.();
        await loop;
      },
    };
  }

  async headPosition(): Promise<bigint> {
    return this.head();
  }

  async close(): Promise<void> {
    for (const wake of [...this.waiting]) wake();
  }

  private head(): bigint {
    return this.all.length === 0 ? START_POSITION : BigInt(this.all.length - 1);
  }

  /** The same ids stored consecutively in this stream where the expectation points: the original result. */
  private retriedAppend(streamId: string, events: NewEvent[], expected: ExpectedRevision): AppendResult | undefined {
    const stored = events.map((e) => this.byId.get(e.id.toLowerCase()));
    if (events.length === 0 || stored.some((s) => !s || s.streamId !== streamId)) return undefined;
    const first = stored[0]!.revision;
    if (!stored.every((s, i) => s!.revision === first + BigInt(i))) return undefined;
    const expectedFirst = expected === 'no_stream' ? 0n : expected === 'any' ? first : expected + 1n;
    if (first !== expectedFirst) return undefined;
    const last = stored.at(-1)!;
    return { nextExpectedRevision: last.revision, position: last.position };
  }
}

function assertDistinctStreams(appends: StreamAppend[]): void {
  const streams = new Set(appends.map((a) => a.streamId));
  if (streams.size !== appends.length) throw new TypeError('a stream appears twice in one appendMany');
}

const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const copy = (event: RecordedEvent): RecordedEvent => ({
  ...event,
  data: viaJson(event.data),
  metadata: viaJson(event.metadata),
  recordedAt: new Date(event.recordedAt),
});
