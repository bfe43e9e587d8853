import { randomUUID } from 'node:crypto';
import { WrongExpectedRevisionError, type EventStore, type RecordedEvent } from '@hcp/eventstore';

/** What the appendMany cases need from the contract suite that runs them. */
export interface AppendManyContext {
  store(): EventStore;
  uniquePrefix(): string;
  /** The store commits an appendMany in one transaction (false: stream by stream, EventStoreDB). */
  atomic: boolean;
}

const newEvent = (n: number) => ({
  id: randomUUID(),
  type: 'ContractTested',
  data: { n },
  metadata: { schema_version: 1 },
});
const events = (count: number) => Array.from({ length: count }, (_, i) => newEvent(i));

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

const ids = (read: RecordedEvent[]) => read.map((e) => e.id);

export function describeAppendManyContract(ctx: AppendManyContext): void {
  describe('appendMany', () => {
    it('appends to several streams and answers each stream its revision and position, in the given order', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const [quota, vm, job] = [`${prefix}quota`, `${prefix}vm`, `${prefix}job`];
      await store.append(quota, events(2), 'no_stream');
      const [vmEvents, quotaEvents, jobEvents] = [events(1), events(2), events(1)];

      const results = await store.appendMany([
        { streamId: quota, events: quotaEvents, expected: 1n },
        { streamId: vm, events: vmEvents, expected: 'no_stream' },
        { streamId: job, events: jobEvents, expected: 'no_stream' },
      ]);

      const [readQuota, readVm, readJob] = await Promise.all([quota, vm, job].map((s) => store.readStream(s)));
      expect(results.map((r) => r.nextExpectedRevision)).toEqual([3n, 0n, 0n]);
      expect(results.map((r) => r.position)).toEqual([
        readQuota[3]!.position,
        readVm[0]!.position,
        readJob[0]!.position,
      ]);
      expect(results[0]!.position < results[1]!.position && results[1]!.position < results[2]!.position).toBe(true);
      expect(ids(readQuota).slice(2)).toEqual(quotaEvents.map((e) => e.id));
      expect(ids(readVm)).toEqual([vmEvents[0]!.id]);
      expect(ids(readJob)).toEqual([jobEvents[0]!.id]);
    });

    it('refuses the whole appendMany when one stream is not where it was expected, naming that stream', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const [quota, vm, job] = [`${prefix}quota`, `${prefix}vm`, `${prefix}job`];
      await store.append(vm, events(1), 'no_stream');

      const err = await rejection(
        store.appendMany([
          { streamId: quota, events: events(1), expected: 'no_stream' },
          { streamId: vm, events: events(1), expected: 'no_stream' },
          { streamId: job, events: events(1), expected: 'no_stream' },
        ]),
      );

      expect(err).toBeInstanceOf(WrongExpectedRevisionError);
      expect(err).toMatchObject({ streamId: vm, expected: 'no_stream', actual: 0n });
      expect(await store.readStream(vm)).toHaveLength(1);
      expect(await store.readStream(job)).toEqual([]);
      // EventStoreDB writes stream by stream: the streams before the failing one stay written.
      expect(await store.readStream(quota)).toHaveLength(ctx.atomic ? 0 : 1);
    });

    it('answers a retried appendMany with the original results and writes nothing twice', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const appends = [
        { streamId: `${prefix}quota`, events: events(2), expected: 'no_stream' as const },
        { streamId: `${prefix}vm`, events: events(1), expected: 'no_stream' as const },
      ];

      const original = await store.appendMany(appends);
      const retried = await store.appendMany(appends);

      expect(retried).toEqual(original);
      expect(ids(await store.readStream(`${prefix}quota`))).toEqual(appends[0]!.events.map((e) => e.id));
      expect(ids(await store.readStream(`${prefix}vm`))).toEqual(appends[1]!.events.map((e) => e.id));
    });

    it('finishes a retried appendMany whose first streams are written already, the rest once', async () => {
      // What a retry after a failure part-way sees on a store without multi-stream transactions.
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const appends = [
        { streamId: `${prefix}quota`, events: events(1), expected: 'no_stream' as const },
        { streamId: `${prefix}vm`, events: events(2), expected: 'no_stream' as const },
      ];
      const first = await store.append(appends[0]!.streamId, appends[0]!.events, 'no_stream');

      const results = await store.appendMany(appends);

      expect(results[0]).toEqual(first);
      expect(results[1]!.nextExpectedRevision).toBe(1n);
      expect(await store.readStream(`${prefix}quota`)).toHaveLength(1);
      expect(ids(await store.readStream(`${prefix}vm`))).toEqual(appends[1]!.events.map((e) => e.id));
    });

    it('refuses an appendMany naming one stream twice, writing nothing', async () => {
      const store = ctx.store();
      const stream = `${ctx.uniquePrefix()}vm`;

      const err = await rejection(
        store.appendMany([
          { streamId: stream, events: events(1), expected: 'no_stream' },
          { streamId: stream, events: events(1), expected: 0n },
        ]),
      );

      expect(err).toBeInstanceOf(TypeError);
      expect(await store.readStream(stream)).toEqual([]);
    });

    it('keeps every stream exact under concurrent appendMany calls on overlapping streams, in any order', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const shared = [`${prefix}a`, `${prefix}b`, `${prefix}c`];
      const writers = 12;
      const rounds = 5;
      // Each writer appends one event to two of the shared streams (in its own order) and one to a
      // stream of its own; conflicts are retried after reading the streams again.
      const write = async (w: number) => {
        const pair = w % 2 === 0 ? [shared[w % 3]!, shared[(w + 1) % 3]!] : [shared[(w + 1) % 3]!, shared[w % 3]!];
        const own = `${prefix}own${w}`;
        for (let round = 0; round < rounds; round++) {
          for (;;) {
            const heads = await Promise.all(
              [...pair, own].map(async (s) => (await store.readStream(s)).at(-1)?.revision ?? ('no_stream' as const)),
            );
            try {
              await store.appendMany(
                [...pair, own].map((streamId, i) => ({ streamId, events: events(1), expected: heads[i]! })),
              );
              break;
            } catch (err) {
              if (!(err instanceof WrongExpectedRevisionError)) throw err;
            }
          }
        }
      };

      await Promise.all(Array.from({ length: writers }, (_, w) => write(w)));

      const reads = await Promise.all(shared.map((s) => store.readStream(s)));
      const total = reads.reduce((n, read) => n + read.length, 0);
      expect(total).toBe(writers * rounds * 2);
      for (const read of reads) expect(read.map((e) => e.revision)).toEqual(read.map((_, i) => BigInt(i)));
      for (let w = 0; w < writers; w++) expect(await store.readStream(`${prefix}own${w}`)).toHaveLength(rounds);
    }, 60_000);
  });
}
