import { GroupedCalls } from './grouped-calls';

/** A run that waits until released, recording the items of each run. */
function heldRuns() {
  const runs: number[][] = [];
  const releases: Array<(fail?: Error) => void> = [];
  const grouped = new GroupedCalls<number, string>(
    (items) =>
      new Promise((resolve, reject) => {
        runs.push(items);
        releases.push((fail) => (fail ? reject(fail) : resolve(`run ${runs.length}: ${items.join(',')}`)));
      }),
  );
  const releaseNext = async (fail?: Error) => {
    releases.shift()!(fail);
    await new Promise((r) => setImmediate(r));
  };
  return { grouped, runs, releaseNext };
}

describe('GroupedCalls', () => {
  it('runs a call alone at once', async () => {
    const { grouped, runs, releaseNext } = heldRuns();
    const answer = grouped.call(1);
    expect(runs).toEqual([[1]]);
    await releaseNext();
    await expect(answer).resolves.toBe('run 1: 1');
  });

  it('carries the calls made while a run is in flight in one next run, each given its result', async () => {
    const { grouped, runs, releaseNext } = heldRuns();
    const first = grouped.call(1);
    const later = [grouped.call(2), grouped.call(3), grouped.call(4)];
    expect(runs).toEqual([[1]]);
    await releaseNext();
    expect(runs).toEqual([[1], [2, 3, 4]]);
    await releaseNext();
    await expect(first).resolves.toBe('run 1: 1');
    await expect(Promise.all(later)).resolves.toEqual(['run 2: 2,3,4', 'run 2: 2,3,4', 'run 2: 2,3,4']);
  });

  it('fails every call of a failed run, and runs the calls after it', async () => {
    const { grouped, runs, releaseNext } = heldRuns();
    void grouped.call(1).catch(() => undefined);
    const failing = [grouped.call(2), grouped.call(3)];
    await releaseNext();
    const after = grouped.call(4);
    await releaseNext(new Error('connection lost'));
    for (const call of failing) await expect(call).rejects.toThrow('connection lost');
    expect(runs).toEqual([[1], [2, 3], [4]]);
    await releaseNext();
    await expect(after).resolves.toBe('run 3: 4');
  });
});
