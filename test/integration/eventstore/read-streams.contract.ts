import { randomUUID } from 'node:crypto';
import { InvalidStreamIdError, type EventStore, type NewEvent, type RecordedEvent } from '@hcp/eventstore';

/** What the readStreams cases need from the contract suite that runs them. */
export interface ReadStreamsContext {
  store(): EventStore;
  uniquePrefix(): string;
}

const LARGE_BATCH = 1_200;

const events = (count: number, stream: string): NewEvent[] =>
  Array.from({ length: count }, (_, n) => ({
    id: randomUUID(),
    type: 'ContractTested',
    data: { stream, n },
    metadata: { schema_version: 1 },
  }));

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

const revisions = (read: RecordedEvent[] | undefined) => read?.map((e) => e.revision);

export function describeReadStreamsContract(ctx: ReadStreamsContext): void {
  describe('readStreams', () => {
    it('reads each stream from its own revision on, in revision order, as readStream reads it', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const [a, b, c] = [`${prefix}vm-a`, `${prefix}vm-b`, `${prefix}vm-c`];
      // Interleaved appends: each stream's revision order differs from the global order of the batch.
      for (const stream of [a, b, a, c, b, a]) await store.append(stream, events(1, stream), 'any');

      const answer = await store.readStreams([
        { streamId: a, fromRevision: 1n },
        { streamId: b },
        { streamId: c, fromRevision: 1n },
      ]);

      expect([...answer.keys()]).toEqual([a, b, c]);
      expect(revisions(answer.get(a))).toEqual([1n, 2n]);
      expect(revisions(answer.get(b))).toEqual([0n, 1n]);
      expect(answer.get(c)).toEqual([]);
      expect(answer.get(a)).toEqual(await store.readStream(a, { fromRevision: 1n }));
      expect(answer.get(b)).toEqual(await store.readStream(b));
    });

    it('answers an absent stream with no events, beside the streams that exist', async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const [present, absent] = [`${prefix}vm-present`, `${prefix}vm-absent`];
      const appended = events(2, present);
      await store.append(present, appended, 'no_stream');

      const answer = await store.readStreams([{ streamId: absent }, { streamId: present }]);

      expect(answer.get(absent)).toEqual([]);
      expect(answer.get(present)?.map((e) => e.id)).toEqual(appended.map((e) => e.id));
      expect(answer.get(present)?.map((e) => e.data)).toEqual(appended.map((e) => e.data));
    });

    it('answers an empty request with an empty map', async () => {
      await expect(ctx.store().readStreams([])).resolves.toEqual(new Map());
    });

    it('refuses a stream that appears twice in one request', async () => {
      const stream = `${ctx.uniquePrefix()}vm`;

      const err = await rejection(
        ctx.store().readStreams([{ streamId: stream }, { streamId: stream, fromRevision: 1n }]),
      );

      expect(err).toBeInstanceOf(TypeError);
    });

    it('refuses a stream id built from a missing value, as append does', async () => {
      const err = await rejection(
        ctx.store().readStreams([{ streamId: `${ctx.uniquePrefix()}vm` }, { streamId: 'vm-undefined' }]),
      );

      expect(err).toBeInstanceOf(InvalidStreamIdError);
    });

    it(`reads a batch of ${LARGE_BATCH} streams back whole`, async () => {
      const store = ctx.store();
      const prefix = ctx.uniquePrefix();
      const streams = Array.from({ length: LARGE_BATCH }, (_, i) => ({
        streamId: `${prefix}vm-${i}`,
        count: (i % 3) + 1,
        fromRevision: BigInt(i % 2),
      }));
      await store.appendMany(
        streams.map(({ streamId, count }) => ({ streamId, events: events(count, streamId), expected: 'no_stream' })),
      );

      const answer = await store.readStreams(streams.map(({ streamId, fromRevision }) => ({ streamId, fromRevision })));

      expect(answer.size).toBe(LARGE_BATCH);
      const wrong = streams.filter(({ streamId, count, fromRevision }) => {
        const read = answer.get(streamId) ?? [];
        const expected = Array.from({ length: count }, (_, n) => BigInt(n)).filter((r) => r >= fromRevision);
        return (
          JSON.stringify(revisions(read)?.map(String)) !== JSON.stringify(expected.map(String)) ||
          read.some((e) => e.streamId !== streamId || e.data.n !== Number(e.revision))
        );
      });
      expect(wrong.map((s) => s.streamId)).toEqual([]);
    }, 60_000);
  });
}
