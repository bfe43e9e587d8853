import { randomUUID } from 'node:crypto';
import type { EventStore, NewEvent, RecordedEvent } from '@hcp/eventstore';

/** What the appendDecided cases need from the contract suite that runs them. */
export interface AppendDecidedContext {
  store(): EventStore;
  uniquePrefix(): string;
}

const event = (data: Record<string, unknown>): NewEvent => ({
  id: randomUUID(),
  type: 'ContractTested',
  data,
  metadata: { schema_version: 1 },
});

/** The revision a decision on `recorded` (read from `from`) expects its stream at. */
const lastOf = (recorded: RecordedEvent[], from: bigint) =>
  recorded.length > 0 ? recorded[recorded.length - 1]!.revision : from === 0n ? ('no_stream' as const) : from - 1n;

/**
 * Stores that offer appendDecided (optional in the port) pass these, and fail them if the method is
 * missing; a store that does not offer it says so and the cases are reported skipped, never passed.
 */
export function describeAppendDecidedContract(ctx: AppendDecidedContext, offered: boolean): void {
  if (!offered) {
    describe.skip('appendDecided (skipped: this store does not offer it; its aggregates take optimistic rounds)', () => {
      it('locks a stream from read to commit', () => undefined);
    });
    return;
  }
  describe('appendDecided', () => {
    const decidedOf = (store: EventStore) => {
      if (!store.appendDecided) throw new Error('this store has no appendDecided');
      return store.appendDecided.bind(store);
    };

    it('hands decide the events from the revision asked and commits what it answers', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const [quota, vm] = [`${prefix}quota`, `${prefix}vm`];
      await store.append(quota, [event({ n: 0 }), event({ n: 1 })], 'no_stream');
      const seen: bigint[] = [];

      const results = await decidedOf(store)(quota, 1n, (recorded) => {
        seen.push(...recorded.map((e) => e.revision));
        return {
          appends: [
            { streamId: quota, events: [event({ n: 2 })], expected: lastOf(recorded, 1n) },
            { streamId: vm, events: [event({ created: true })], expected: 'no_stream' },
          ],
        };
      });

      expect(seen).toEqual([1n]);
      expect(results.map((r) => r.nextExpectedRevision)).toEqual([2n, 0n]);
      expect((await store.readStream(quota)).map((e) => e.data)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
      expect((await store.readStream(vm)).map((e) => e.data)).toEqual([{ created: true }]);
    });

    it('writes nothing when decide answers nothing', async () => {
      const store = ctx.store();
      const stream = `${ctx.uniquePrefix()}quota`;

      expect(await decidedOf(store)(stream, 0n, () => null)).toEqual([]);
      expect(await decidedOf(store)(stream, 0n, () => ({ appends: [] }))).toEqual([]);
      expect(await store.readStream(stream)).toEqual([]);
    });

    it('writes nothing and passes the error on when decide throws', async () => {
      const store = ctx.store();
      const stream = `${ctx.uniquePrefix()}quota`;
      const refused = new Error('QUOTA_EXCEEDED');

      await expect(
        decidedOf(store)(stream, 0n, () => {
          throw refused;
        }),
      ).rejects.toBe(refused);
      await store.append(stream, [event({ after: 'refusal' })], 'no_stream');
      expect((await store.readStream(stream)).map((e) => e.data)).toEqual([{ after: 'refusal' }]);
    });

    it('queues concurrent decisions on one stream: each decides on the one before it, none is refused', async () => {
      const store = ctx.store();
      const stream = `${ctx.uniquePrefix()}quota`;
      const writers = 12;

      // Each appends the count of events it was handed, expecting the stream where it read it: with
      // optimistic concurrency alone most of these would fail with WrongExpectedRevisionError.
      await Promise.all(
        Array.from({ length: writers }, () =>
          decidedOf(store)(stream, 0n, (recorded) => ({
            appends: [{ streamId: stream, events: [event({ saw: recorded.length })], expected: lastOf(recorded, 0n) }],
          })),
        ),
      );

      expect((await store.readStream(stream)).map((e) => e.data)).toEqual(
        Array.from({ length: writers }, (_, saw) => ({ saw })),
      );
    });
  });
}
