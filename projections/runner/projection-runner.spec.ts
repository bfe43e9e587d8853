import { restartBackoffMs, restartWaitMs } from './projection-runner';

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

describe('restart wait after a failure', () => {
  const top = () => 1;
  const outage = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const ownFault = new TypeError("Cannot read properties of undefined (reading 'vm_id')");
  const options = { retryMs: 1000, maxRetryMs: 30_000, maxTransientRetryMs: 2_000 };

  it('probes an outage at the short cap however many failures came before', () => {
    expect([1, 2, 5, 50].map((n) => restartWaitMs(outage, n, options, top))).toEqual([1000, 2000, 2000, 2000]);
  });

  it('backs off to the long cap from a failure that is not an outage', () => {
    expect([1, 5, 50].map((n) => restartWaitMs(ownFault, n, options, top))).toEqual([1000, 16_000, 30_000]);
  });

  it('reads an outage through the cause chain, as a lost lock session reports it', () => {
    const lockLost = new Error('the session holding the advisory lock ended', { cause: outage });
    expect(restartWaitMs(lockLost, 9, options, top)).toBe(2000);
  });

  it('never waits less than the base wait, whatever the caps', () => {
    expect(restartWaitMs(outage, 3, { retryMs: 500, maxRetryMs: 100, maxTransientRetryMs: 50 }, top)).toBe(500);
  });
});
