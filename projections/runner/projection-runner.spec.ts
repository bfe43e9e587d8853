import { restartBackoffMs } from './projection-runner';

describe('restart backoff', () => {
  it('doubles with each failure in a row from the base wait, up to the cap', () => {
    const top = () => 1; // the longest wait jitter allows
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => restartBackoffMs(n, 1000, 30_000, top))).toEqual([
      1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);
  });

  it('takes at most half off at random, so restarting instances spread out', () => {
    expect(restartBackoffMs(3, 1000, 30_000, () => 0)).toBe(2000);
    expect(restartBackoffMs(3, 1000, 30_000, () => 0.5)).toBe(3000);
  });

  it('stays at the cap however long the failures go on', () => {
    expect(restartBackoffMs(10_000, 1000, 30_000, () => 1)).toBe(30_000);
  });
});
