import { randomUUID } from 'node:crypto';
import {
  InvalidStreamIdError,
  WrongExpectedRevisionError,
  type ExpectedRevision,
  type EventStore,
  type NewEvent,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from '@hcp/eventstore';
import { describeAppendManyContract } from './append-many.contract';
import { describeReadStreamsContract } from './read-streams.contract';
import { describeAppendDecidedContract } from './append-decided.contract';

export interface EventStoreFixture {
  store: EventStore;
  /**
   * Resolves once every event appended so far is readable through readAll, for stores that make an event
   * readable only later than its append returned (PostgreSQL: once no older transaction anywhere on the
   * server is still open). Left out by stores whose appends are readable at once.
   */
  allReadable?(): Promise<void>;
  /** The store has no multi-stream transaction: appendMany writes stream by stream (EventStoreDB). */
  appendsStreamByStream?: boolean;
  cleanup(): Promise<void>;
}

const SUBSCRIPTION_TEST_MS = 20_000;
const STRESS_TEST_MS = 90_000;

export function newEvent(type = 'ContractTested', data: Record<string, unknown> = {}): NewEvent {
  return { id: randomUUID(), type, data, metadata: { schema_version: 1, trace_id: randomUUID() } };
}

export function newEvents(count: number, type = 'ContractTested'): NewEvent[] {
  return Array.from({ length: count }, (_, i) => newEvent(type, { n: i }));
}

/** Collects what a subscription delivers, and what it reports, for assertions. */
export class Collector {
  readonly events: RecordedEvent[] = [];
  readonly errors: unknown[] = [];
  private subscription: Subscription | undefined;

  constructor(private readonly accept: (event: RecordedEvent) => boolean = () => true) {}

  start(store: EventStore, options: SubscribeOptions = {}, handler?: (event: RecordedEvent) => Promise<void>): this {
    this.subscription = store.subscribeToAll(
      async (event) => {
        if (handler) await handler(event);
        if (this.accept(event)) this.events.push(event);
      },
      { ...options, onError: (err) => this.errors.push(err) },
    );
    return this;
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
  }

  ids(): string[] {
    return this.events.map((e) => e.id);
  }

  async waitForCount(count: number, timeoutMs = 10_000): Promise<void> {
    await waitFor(
      () => this.events.length >= count || this.errors.length > 0,
      timeoutMs,
      () => `expected ${count} events, got ${this.events.length}`,
    );
    if (this.errors.length > 0) throw this.errors[0];
  }
}

export async function waitFor(condition: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${describe()}`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function expectStrictlyIncreasing(positions: bigint[]): void {
  for (let i = 1; i < positions.length; i++) {
    if (positions[i]! <= positions[i - 1]!) {
      throw new Error(`positions not strictly increasing at ${i}: ${positions[i - 1]} then ${positions[i]}`);
    }
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject');
}

/**
 * The behaviour every EventStore adapter must show. The factory is called once per suite; every test
 * uses stream ids unique to this run, so suites may share a server.
 */
export function describeEventStoreContract(
  name: string,
  factory: () => Promise<EventStoreFixture>,
  /** The optional port methods the store offers (known before the factory runs, to declare the cases). */
  offers: { appendDecided: boolean } = { appendDecided: true },
): void {
  describe(`${name} event store contract`, () => {
    let fixture: EventStoreFixture | undefined;
    let store: EventStore;
    const run = randomUUID().replace(/-/g, '').slice(0, 10);
    let counter = 0;
    /** A prefix no other test (or run) uses; stream ids below it are this test's own. */
    const uniquePrefix = (): string => `c${run}t${++counter}-`;
    const mine = (prefix: string) => (event: RecordedEvent) => event.streamId.startsWith(prefix);

    beforeAll(async () => {
      fixture = await factory();
      store = fixture.store;
    });

    afterAll(async () => {
      await fixture?.cleanup();
    });

    describeAppendManyContract({
      store: () => store,
      uniquePrefix,
      get atomic() {
        return !fixture?.appendsStreamByStream;
      },
    });

    describeReadStreamsContract({ store: () => store, uniquePrefix });

    describeAppendDecidedContract({ store: () => store, uniquePrefix }, offers.appendDecided);

    it('appends events and reads them back in order', async () => {
      const stream = `${uniquePrefix()}vm`;
      const first = newEvents(3);
      const result = await store.append(stream, first, 'no_stream');
      const second = newEvents(2);
      const next = await store.append(stream, second, result.nextExpectedRevision);

      const read = await store.readStream(stream);

      expect(result.nextExpectedRevision).toBe(2n);
      expect(next.nextExpectedRevision).toBe(4n);
      expect(read.map((e) => e.id)).toEqual([...first, ...second].map((e) => e.id));
      expect(read.map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n, 4n]);
      expect(read.every((e) => e.streamId === stream && e.type === 'ContractTested')).toBe(true);
      expect(read[1]!.data).toEqual({ n: 1 });
      expect(read[1]!.metadata).toMatchObject({ schema_version: 1, trace_id: first[1]!.metadata!.trace_id });
      expect(read[0]!.recordedAt).toBeInstanceOf(Date);
      expect(typeof read[0]!.position).toBe('bigint');
      expectStrictlyIncreasing(read.map((e) => e.position));
      expect(read[2]!.position).toBe(result.position);
      expect(read[4]!.position).toBe(next.position);
    });

    it('reads a stream of more than ten events in revision order and appends after its last', async () => {
      const stream = `${uniquePrefix()}vm`;
      let revision: ExpectedRevision = 'no_stream';
      for (let i = 0; i < 12; i++) revision = (await store.append(stream, newEvents(1), revision)).nextExpectedRevision;

      const read = await store.readStream(stream);

      expect(read.map((e) => e.revision)).toEqual(Array.from({ length: 12 }, (_, i) => BigInt(i)));
      expect((await store.readStream(stream, { fromRevision: 9n })).map((e) => e.revision)).toEqual([9n, 10n, 11n]);
      await expect(store.append(stream, newEvents(1), read[read.length - 1]!.revision)).resolves.toMatchObject({
        nextExpectedRevision: 12n,
      });
    });

    it('reads a stream from a given revision, at most maxCount events', async () => {
      const stream = `${uniquePrefix()}vm`;
      await store.append(stream, newEvents(5), 'no_stream');

      const read = await store.readStream(stream, { fromRevision: 1n, maxCount: 2 });

      expect(read.map((e) => e.revision)).toEqual([1n, 2n]);
    });

    it('reads an absent stream as an empty list', async () => {
      await expect(store.readStream(`${uniquePrefix()}absent`)).resolves.toEqual([]);
    });

    it('rejects a no_stream append to an existing stream', async () => {
      const stream = `${uniquePrefix()}vm`;
      await store.append(stream, [newEvent()], 'no_stream');

      const err = await rejection(store.append(stream, [newEvent()], 'no_stream'));

      expect(err).toBeInstanceOf(WrongExpectedRevisionError);
      expect(err).toMatchObject({ streamId: stream, expected: 'no_stream', actual: 0n });
      expect(await store.readStream(stream)).toHaveLength(1);
    });

    it('rejects a stale or future expected revision and accepts any', async () => {
      const stream = `${uniquePrefix()}vm`;
      await store.append(stream, newEvents(2), 'no_stream');

      const stale = await rejection(store.append(stream, [newEvent()], 0n));
      const future = await rejection(store.append(stream, [newEvent()], 5n));
      const absent = await rejection(store.append(`${uniquePrefix()}absent`, [newEvent()], 0n));
      const any = await store.append(stream, [newEvent()], 'any');

      expect(stale).toBeInstanceOf(WrongExpectedRevisionError);
      expect(stale).toMatchObject({ expected: 0n, actual: 1n });
      expect(future).toBeInstanceOf(WrongExpectedRevisionError);
      expect(absent).toBeInstanceOf(WrongExpectedRevisionError);
      expect(absent).toMatchObject({ actual: 'no_stream' });
      expect(any.nextExpectedRevision).toBe(2n);
      expect(await store.readStream(stream)).toHaveLength(3);
    });

    it('lets exactly one of N concurrent appenders with the same expected revision win', async () => {
      const stream = `${uniquePrefix()}vm`;
      await store.append(stream, [newEvent()], 'no_stream');
      const created = `${uniquePrefix()}vm`;

      const onRevision = await Promise.allSettled(
        Array.from({ length: 10 }, () => store.append(stream, newEvents(2), 0n)),
      );
      const onCreation = await Promise.allSettled(
        Array.from({ length: 10 }, () => store.append(created, newEvents(2), 'no_stream')),
      );

      for (const outcomes of [onRevision, onCreation]) {
        expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        const losers = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(losers).toHaveLength(9);
        for (const loser of losers) expect(loser.reason).toBeInstanceOf(WrongExpectedRevisionError);
      }
      expect((await store.readStream(stream)).map((e) => e.revision)).toEqual([0n, 1n, 2n]);
      expect((await store.readStream(created)).map((e) => e.revision)).toEqual([0n, 1n]);
    });

    it('returns the original result when an append is retried with the same event ids', async () => {
      const stream = `${uniquePrefix()}vm`;
      const created = newEvents(2);
      const original = await store.append(stream, created, 'no_stream');
      const retried = await store.append(stream, created, 'no_stream');
      const more = newEvents(3);
      const originalMore = await store.append(stream, more, 1n);
      const retriedMore = await store.append(stream, more, 1n);

      expect(retried).toEqual(original);
      expect(retriedMore).toEqual(originalMore);
      expect((await store.readStream(stream)).map((e) => e.id)).toEqual([...created, ...more].map((e) => e.id));
    });

    it('makes a retried append of an event already stored by its id a no-op, whatever the expectation', async () => {
      // What a process manager relies on: an effect appended again after its batch failed (its event id
      // derived from the event it reacts to) lands once.
      const stream = `${uniquePrefix()}job`;
      const queued = newEvent();
      const first = await store.append(stream, [queued], 'no_stream');
      const againAny = await store.append(stream, [queued], 'any');
      const againNoStream = await store.append(stream, [queued], 'no_stream');

      expect(againAny).toEqual(first);
      expect(againNoStream).toEqual(first);
      expect((await store.readStream(stream)).map((e) => e.id)).toEqual([queued.id]);
    });

    it.each(['vm-undefined', 'job-null', 'job-', '', 'vm-NaN'])(
      'refuses the stream id %j, built from a missing value, and writes nothing',
      async (streamId) => {
        const err = await rejection(store.append(streamId, [newEvent()], 'any'));

        expect(err).toBeInstanceOf(InvalidStreamIdError);
        expect(err).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
        expect(await store.readStream(streamId)).toEqual([]);
      },
    );

    it('reads all events after a position in global order, at most maxCount', async () => {
      const prefix = uniquePrefix();
      const before = await store.append(`${prefix}vm-a`, [newEvent()], 'no_stream');
      const a = newEvents(3);
      const b = newEvents(3);
      await store.append(`${prefix}vm-a`, a.slice(0, 2), 0n);
      await store.append(`${prefix}vm-b`, b, 'no_stream');
      await store.append(`${prefix}vm-a`, a.slice(2), 2n);

      // Readers see an event once no older transaction anywhere on the server is still open, so on a busy
      // (shared) server the last appends become readable only when the store says so, however long that is.
      await fixture!.allReadable?.();
      const all = (await store.readAll(before.position, 1_000)).filter(mine(prefix));
      const page = await store.readAll(before.position, 2);
      const fromStart = await store.readAll('start', 1);

      expect(all.map((e) => e.id)).toEqual([a[0], a[1], ...b, a[2]].map((e) => e!.id));
      expectStrictlyIncreasing(all.map((e) => e.position));
      expect(page).toHaveLength(2);
      expect(page[0]!.position).toBeGreaterThan(before.position);
      expectStrictlyIncreasing(page.map((e) => e.position));
      expect(fromStart).toHaveLength(1);
    });

    it('reports the position of the last appended event as the head', async () => {
      const result = await store.append(`${uniquePrefix()}vm`, newEvents(2), 'no_stream');

      await expect(store.headPosition()).resolves.toBe(result.position);
    });

    it(
      'delivers catch-up then live events in position order from a checkpoint',
      async () => {
        const prefix = uniquePrefix();
        const stream = `${prefix}vm`;
        const history = newEvents(4);
        await store.append(stream, history, 'no_stream');
        const [checkpoint] = await store.readStream(stream, { maxCount: 1 });
        const collector = new Collector(mine(prefix)).start(store, { fromPosition: checkpoint!.position });
        try {
          await collector.waitForCount(3);
          const live = newEvents(2);
          await store.append(stream, live.slice(0, 1), 3n);
          await store.append(`${prefix}job`, live.slice(1), 'no_stream');
          await collector.waitForCount(5);

          expect(collector.ids()).toEqual([...history.slice(1), ...live].map((e) => e.id));
          expectStrictlyIncreasing(collector.events.map((e) => e.position));
          expect(collector.events[0]!.position).toBeGreaterThan(checkpoint!.position);
        } finally {
          await collector.stop();
        }
      },
      SUBSCRIPTION_TEST_MS,
    );

    it(
      'delivers only the streams that match the prefix filter',
      async () => {
        const prefix = uniquePrefix();
        const head = await store.headPosition();
        const collector = new Collector().start(store, {
          fromPosition: head,
          streamPrefixes: [`${prefix}vm-`, `${prefix}job-`],
        });
        try {
          const wanted: NewEvent[] = [];
          for (let i = 0; i < 3; i++) {
            const vm = newEvent();
            const job = newEvent();
            wanted.push(vm, job);
            await store.append(`${prefix}vm-${i}`, [vm], 'no_stream');
            await store.append(`${prefix}other-${i}`, [newEvent()], 'no_stream');
            await store.append(`${prefix}job-${i}`, [job], 'no_stream');
          }
          await collector.waitForCount(wanted.length);
          await sleep(200);

          expect(collector.ids()).toEqual(wanted.map((e) => e.id));
        } finally {
          await collector.stop();
        }
      },
      SUBSCRIPTION_TEST_MS,
    );

    it(
      'awaits the handler before delivering the next event',
      async () => {
        const prefix = uniquePrefix();
        const head = await store.headPosition();
        let running = 0;
        let maxRunning = 0;
        const collector = new Collector(mine(prefix)).start(store, { fromPosition: head }, async (event) => {
          if (!event.streamId.startsWith(prefix)) return;
          running += 1;
          maxRunning = Math.max(maxRunning, running);
          await sleep(15);
          running -= 1;
        });
        try {
          await store.append(`${prefix}vm`, newEvents(6), 'no_stream');
          await collector.waitForCount(6);

          expect(maxRunning).toBe(1);
        } finally {
          await collector.stop();
        }
      },
      SUBSCRIPTION_TEST_MS,
    );

    it(
      'ends the subscription and reports to onError when the handler throws',
      async () => {
        const prefix = uniquePrefix();
        const head = await store.headPosition();
        const delivered: RecordedEvent[] = [];
        const failure = new Error('projection failed');
        const reported: unknown[] = [];
        const subscription = store.subscribeToAll(
          async (event) => {
            if (!event.streamId.startsWith(prefix)) return;
            delivered.push(event);
            if (delivered.length === 2) throw failure;
          },
          { fromPosition: head, onError: (err) => reported.push(err) },
        );
        try {
          await store.append(`${prefix}vm`, newEvents(4), 'no_stream');
          await waitFor(
            () => reported.length > 0,
            10_000,
            () => 'onError was not called',
          );
          await store.append(`${prefix}vm`, newEvents(2), 3n);
          await sleep(300);

          expect(reported).toEqual([failure]);
          expect(delivered).toHaveLength(2);
        } finally {
          await subscription.stop();
        }
      },
      SUBSCRIPTION_TEST_MS,
    );

    it(
      'delivers nothing once stop() has resolved',
      async () => {
        const prefix = uniquePrefix();
        const head = await store.headPosition();
        const collector = new Collector(mine(prefix)).start(store, { fromPosition: head });
        await store.append(`${prefix}vm`, [newEvent()], 'no_stream');
        await collector.waitForCount(1);

        await collector.stop();
        await store.append(`${prefix}vm`, newEvents(3), 0n);
        await sleep(300);

        expect(collector.events).toHaveLength(1);
        expect(collector.errors).toEqual([]);
      },
      SUBSCRIPTION_TEST_MS,
    );

    it(
      'delivers every event exactly once, in increasing positions, to a subscriber racing 20 concurrent writers',
      async () => {
        const prefix = uniquePrefix();
        const writers = 20;
        const eventsPerWriter = 50;
        const streams = 7;
        const head = await store.headPosition();
        const collector = new Collector().start(store, { fromPosition: head, streamPrefixes: [prefix] });
        try {
          const written = new Set<string>();
          await Promise.all(
            Array.from({ length: writers }, async (_, writer) => {
              for (let i = 0; i < eventsPerWriter; i++) {
                const event = newEvent('StressTested', { writer, i });
                written.add(event.id);
                // Writers share streams, so same-stream appends contend as well as global positions.
                await store.append(`${prefix}s${(writer + i) % streams}`, [event], 'any');
              }
            }),
          );
          await collector.waitForCount(writers * eventsPerWriter, 30_000);
          await sleep(300);

          const ids = collector.ids();
          expect(ids).toHaveLength(writers * eventsPerWriter);
          expect(new Set(ids).size).toBe(ids.length);
          expect([...written].every((id) => ids.includes(id))).toBe(true);
          expectStrictlyIncreasing(collector.events.map((e) => e.position));
          for (let s = 0; s < streams; s++) {
            const revisions = collector.events.filter((e) => e.streamId === `${prefix}s${s}`).map((e) => e.revision);
            expect(revisions).toEqual(revisions.map((_, i) => BigInt(i)));
          }
        } finally {
          await collector.stop();
        }
      },
      STRESS_TEST_MS,
    );
  });
}
