import { Backoff, sleep } from './backoff';

describe('Backoff', () => {
  it('doubles from the initial delay up to the cap, and starts over after a reset', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1_000 });
    expect([1, 2, 3, 4, 5, 6].map(() => backoff.next())).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoff.failures).toBe(6);
    backoff.reset();
    expect(backoff.next()).toBe(100);
  });

  it('takes at most its jitter share off a delay', () => {
    const low = new Backoff({ initialMs: 1_000, maxMs: 1_000, jitter: 0.2, random: () => 1 });
    const high = new Backoff({ initialMs: 1_000, maxMs: 1_000, jitter: 0.2, random: () => 0 });
    expect(low.next()).toBe(800);
    expect(high.next()).toBe(1_000);
  });

  it('does not overflow after many failures', () => {
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
    for (let i = 0; i < 2_000; i += 1) backoff.next();
    expect(backoff.next()).toBe(30_000);
  });
});

describe('sleep', () => {
  it('ends at once when its signal fires, so a stopping loop does not sit out its delay', async () => {
    const stopper = new AbortController();
    const asleep = sleep(3_600_000, stopper.signal);
    stopper.abort();
    await expect(asleep).resolves.toBeUndefined();
  });
});
