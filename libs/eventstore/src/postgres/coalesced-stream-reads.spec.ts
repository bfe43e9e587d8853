import type { RecordedEvent } from '../event-store.port';
import { CoalescedStreamReads } from './coalesced-stream-reads';

const event = (streamId: string, revision: number): RecordedEvent => ({
  id: `${streamId}@${revision}`,
  streamId,
  type: 'Happened',
  revision: BigInt(revision),
  position: BigInt(revision),
  data: { n: revision },
  metadata: {} as RecordedEvent['metadata'],
  recordedAt: new Date(0),
});

/** A store of three streams of three events whose statements finish when the test says so. */
function fakeStore() {
  const statements: Array<{ wanted: Map<string, bigint>; finish: (err?: Error) => void }> = [];
  const read = (wanted: ReadonlyMap<string, bigint>): Promise<RecordedEvent[]> =>
    new Promise((resolve, reject) => {
      statements.push({
        wanted: new Map(wanted),
        finish: (err) =>
          err
            ? reject(err)
            : resolve(
                [...wanted].flatMap(([stream, from]) =>
                  stream === 'absent' ? [] : [0, 1, 2].filter((r) => r >= from).map((r) => event(stream, r)),
                ),
              ),
      });
    });
  return { statements, read };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const ids = (events: RecordedEvent[]) => events.map((e) => e.id);

describe('CoalescedStreamReads', () => {
  it('reads the streams asked in one tick in one statement and answers each its own events', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read);

    const answers = Promise.all([reads.read('vm-1', 0n), reads.read('job-1', 1n), reads.read('absent', 0n)]);
    await settle();
    expect(store.statements.map((s) => s.wanted)).toEqual([
      new Map([
        ['vm-1', 0n],
        ['job-1', 1n],
        ['absent', 0n],
      ]),
    ]);
    store.statements[0]!.finish();

    expect((await answers).map(ids)).toEqual([['vm-1@0', 'vm-1@1', 'vm-1@2'], ['job-1@1', 'job-1@2'], []]);
  });

  it('sends a read asked alone at once, without waiting for other reads', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read);

    const answer = reads.read('vm-1', 0n);
    await settle();
    expect(store.statements).toHaveLength(1);
    store.statements[0]!.finish();

    expect(ids(await answer)).toEqual(['vm-1@0', 'vm-1@1', 'vm-1@2']);
  });

  it('gathers the reads asked while every statement runs into the next one', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read, 1);

    const first = reads.read('vm-1', 0n);
    await settle();
    const later = Promise.all([reads.read('vm-2', 0n), reads.read('vm-3', 2n)]);
    await settle();
    expect(store.statements).toHaveLength(1);

    store.statements[0]!.finish();
    await first;
    await settle();
    expect(store.statements.map((s) => [...s.wanted.keys()])).toEqual([['vm-1'], ['vm-2', 'vm-3']]);
    store.statements[1]!.finish();
    expect((await later).map(ids)).toEqual([['vm-2@0', 'vm-2@1', 'vm-2@2'], ['vm-3@2']]);
  });

  it('runs at most the given number of statements at once', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read, 2);

    reads.read('vm-1', 0n);
    await settle();
    reads.read('vm-2', 0n);
    await settle();
    reads.read('vm-3', 0n);
    await settle();

    expect(store.statements).toHaveLength(2);
  });

  it('reads a stream asked twice once, from the lower revision, and hands each caller its own copy', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read);

    const answers = Promise.all([reads.read('vm-1', 2n), reads.read('vm-1', 0n), reads.read('vm-1', 0n)]);
    await settle();
    expect(store.statements.map((s) => s.wanted)).toEqual([new Map([['vm-1', 0n]])]);
    store.statements[0]!.finish();
    const [fromTwo, whole, again] = await answers;

    expect(ids(fromTwo!)).toEqual(['vm-1@2']);
    expect(ids(whole!)).toEqual(['vm-1@0', 'vm-1@1', 'vm-1@2']);
    expect(again).toEqual(whole);
    (whole![0]!.data as { n: number }).n = 99;
    expect(again![0]!.data).toEqual({ n: 0 });
    expect(fromTwo![0]!.data).toEqual({ n: 2 });
  });

  it('fails only the reads a failed statement carried, and reads on after it', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read, 1);

    const failed = Promise.all([reads.read('vm-1', 0n), reads.read('vm-2', 0n)]);
    await settle();
    const next = reads.read('vm-3', 0n);
    store.statements[0]!.finish(new Error('connection terminated'));
    await expect(failed).rejects.toThrow('connection terminated');
    await settle();
    store.statements[1]!.finish();

    expect(ids(await next)).toEqual(['vm-3@0', 'vm-3@1', 'vm-3@2']);
  });

  it('never sends a read in a statement that started before it was asked', async () => {
    const store = fakeStore();
    const reads = new CoalescedStreamReads(store.read, 2);

    reads.read('vm-1', 0n);
    await settle();
    const asked = reads.read('vm-1', 0n);
    await settle();

    expect(store.statements).toHaveLength(2);
    store.statements[0]!.finish();
    store.statements[1]!.finish();
    expect(ids(await asked)).toEqual(['vm-1@0', 'vm-1@1', 'vm-1@2']);
  });
});
