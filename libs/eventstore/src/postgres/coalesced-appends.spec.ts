import { randomUUID } from 'node:crypto';
import type { AppendResult, StreamAppend } from '../event-store.port';
import { CoalescedAppends } from './coalesced-appends';

const append = (streamId: string, eventIds: string[] = [randomUUID()]): StreamAppend[] => [
  { streamId, events: eventIds.map((id) => ({ id, type: 'Happened', data: {} })), expected: 'any' },
];

/** A store whose transactions finish when the test says so; each call's result names its first stream. */
function fakeStore() {
  const transactions: Array<{ calls: StreamAppend[][]; finish: (err?: Error) => void }> = [];
  const appendCalls = (calls: StreamAppend[][]): Promise<Array<PromiseSettledResult<AppendResult[]>>> =>
    new Promise((resolve, reject) => {
      transactions.push({
        calls,
        finish: (err) =>
          err
            ? reject(err)
            : resolve(
                calls.map(
                  (call, i): PromiseSettledResult<AppendResult[]> =>
                    call[0]!.streamId.startsWith('refused')
                      ? { status: 'rejected', reason: new Error(`${call[0]!.streamId} refused`) }
                      : { status: 'fulfilled', value: [{ nextExpectedRevision: BigInt(i), position: BigInt(i) }] },
                ),
              ),
      });
    });
  const streamsOf = (n: number) => transactions[n]!.calls.map((call) => call.map((a) => a.streamId).join('+'));
  return { transactions, appendCalls, streamsOf };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('CoalescedAppends', () => {
  it('commits the appends asked in one tick in one transaction and answers each its own result', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls);

    const answers = Promise.all([appends.append(append('vm-1')), appends.append(append('job-1'))]);
    await settle();
    expect(store.transactions).toHaveLength(1);
    expect(store.streamsOf(0)).toEqual(['vm-1', 'job-1']);
    store.transactions[0]!.finish();

    expect(await answers).toEqual([
      [{ nextExpectedRevision: 0n, position: 0n }],
      [{ nextExpectedRevision: 1n, position: 1n }],
    ]);
  });

  it('refuses only the call the transaction refused', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls);

    const kept = appends.append(append('vm-1'));
    const refused = appends.append(append('refused-1'));
    await settle();
    store.transactions[0]!.finish();

    await expect(kept).resolves.toHaveLength(1);
    await expect(refused).rejects.toThrow('refused-1 refused');
  });

  it('fails every call of a transaction that failed, and goes on with the next', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls, 1);

    const first = [appends.append(append('a')), appends.append(append('b'))];
    await settle();
    const later = appends.append(append('c'));
    store.transactions[0]!.finish(new Error('connection lost'));

    await Promise.all(first.map((call) => expect(call).rejects.toThrow('connection lost')));
    await settle();
    expect(store.streamsOf(1)).toEqual(['c']);
    store.transactions[1]!.finish();
    await expect(later).resolves.toHaveLength(1);
  });

  it('never puts two appends to one stream in one transaction, and keeps their order', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls, 1);

    const calls = [
      appends.append(append('vm-1')),
      appends.append([...append('job-1'), ...append('vm-1')]),
      appends.append(append('job-1')),
      appends.append(append('vm-2')),
    ];
    await settle();
    // The second waits for the first (vm-1); the third must not overtake it (job-1): both wait.
    expect(store.streamsOf(0)).toEqual(['vm-1', 'vm-2']);
    store.transactions[0]!.finish();
    await settle();
    expect(store.streamsOf(1)).toEqual(['job-1+vm-1']);
    store.transactions[1]!.finish();
    await settle();
    expect(store.streamsOf(2)).toEqual(['job-1']);
    store.transactions[2]!.finish();

    await expect(Promise.all(calls)).resolves.toHaveLength(4);
  });

  it('never puts one event id in two calls of one transaction', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls, 1);
    const id = randomUUID();

    const calls = [appends.append(append('a', [id])), appends.append(append('b', [id.toUpperCase()]))];
    await settle();
    expect(store.streamsOf(0)).toEqual(['a']);
    store.transactions[0]!.finish();
    await settle();
    expect(store.streamsOf(1)).toEqual(['b']);
    store.transactions[1]!.finish();

    await expect(Promise.all(calls)).resolves.toHaveLength(2);
  });

  it('runs at most maxInFlight transactions; calls asked meanwhile go together in the next', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls, 2);

    const first = appends.append(append('a'));
    await settle();
    const second = appends.append(append('b'));
    await settle();
    const waiting = [appends.append(append('c')), appends.append(append('d'))];
    await settle();
    expect(store.transactions).toHaveLength(2);

    store.transactions[0]!.finish();
    await settle();
    expect(store.streamsOf(2)).toEqual(['c', 'd']);
    store.transactions[1]!.finish();
    store.transactions[2]!.finish();
    await expect(Promise.all([first, second, ...waiting])).resolves.toHaveLength(4);
  });

  it('bounds a transaction to 64 calls; the rest of a burst goes in the next', async () => {
    const store = fakeStore();
    const appends = new CoalescedAppends(store.appendCalls, 1);

    const calls = Array.from({ length: 100 }, (_, i) => appends.append(append(`vm-${i}`)));
    await settle();
    expect(store.transactions[0]!.calls).toHaveLength(64);
    store.transactions[0]!.finish();
    await settle();
    expect(store.transactions[1]!.calls).toHaveLength(36);
    store.transactions[1]!.finish();

    await expect(Promise.all(calls)).resolves.toHaveLength(100);
  });
});
