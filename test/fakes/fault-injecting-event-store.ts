import {
  AppendManyOptions,
  AppendResult,
  EventHandler,
  EventStore,
  ExpectedRevision,
  InMemoryEventStore,
  NewEvent,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  StreamRead,
  SubscribeOptions,
  Subscription,
} from '@hcp/eventstore';

/** When an injected append failure strikes: before anything is written, or after the events were stored (a lost answer). */
export type AppendFaultTiming = 'before_write' | 'after_write';

/**
 * An event store (the InMemoryEventStore inside) whose appends to, or reads of, streams with a given
 * prefix throw the error given: the store's connection failing in the middle of a command.
 */
export class FaultInjectingEventStore implements EventStore {
  private readonly appendFaults: Array<{ prefix: string; error: unknown; timing: AppendFaultTiming }> = [];
  private readonly readFaults: Array<{ prefix: string; error: unknown }> = [];

  constructor(readonly inner: EventStore = new InMemoryEventStore()) {}

  /** Every append to a stream whose id starts with `prefix` throws `error`, before or after writing. */
  failAppendsTo(prefix: string, error: unknown, timing: AppendFaultTiming = 'before_write'): this {
    this.appendFaults.push({ prefix, error, timing });
    return this;
  }

  /** Every read of a stream whose id starts with `prefix` throws `error`. */
  failReadsOf(prefix: string, error: unknown): this {
    this.readFaults.push({ prefix, error });
    return this;
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const fault = this.appendFaults.find((f) => streamId.startsWith(f.prefix));
    if (fault?.timing === 'before_write') throw fault.error;
    const result = await this.inner.append(streamId, events, expected);
    if (fault) throw fault.error;
    return result;
  }

  get commitsSqlWrites(): boolean {
    return this.inner.commitsSqlWrites;
  }

  /** A fault on any of the streams strikes the whole appendMany, before or after it was written. */
  async appendMany(appends: StreamAppend[], options?: AppendManyOptions): Promise<AppendResult[]> {
    const fault = this.appendFaults.find((f) => appends.some((a) => a.streamId.startsWith(f.prefix)));
    if (fault?.timing === 'before_write') throw fault.error;
    const results = await this.inner.appendMany(appends, options);
    if (fault) throw fault.error;
    return results;
  }

  async readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    const fault = this.readFaults.find((f) => streamId.startsWith(f.prefix));
    if (fault) throw fault.error;
    return this.inner.readStream(streamId, options);
  }

  /** A fault on any of the streams strikes the whole batch, as a failing statement would. */
  async readStreams(reads: StreamRead[]): Promise<Map<string, RecordedEvent[]>> {
    const fault = this.readFaults.find((f) => reads.some((r) => r.streamId.startsWith(f.prefix)));
    if (fault) throw fault.error;
    return this.inner.readStreams(reads);
  }

  readAll(fromPosition: bigint | 'start', maxCount: number): Promise<RecordedEvent[]> {
    return this.inner.readAll(fromPosition, maxCount);
  }

  subscribeToAll(handler: EventHandler, options?: SubscribeOptions): Subscription {
    return this.inner.subscribeToAll(handler, options);
  }

  headPosition(): Promise<bigint> {
    return this.inner.headPosition();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
