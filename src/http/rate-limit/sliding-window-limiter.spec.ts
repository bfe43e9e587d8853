import { SlidingWindowLimiter } from './sliding-window-limiter';

const MINUTE = 60_000;

describe('SlidingWindowLimiter', () => {
  let clock: number;
  let limiter: SlidingWindowLimiter;
  const hit = (key = 'actor:a', limit = 3, blockDuration = MINUTE) =>
    limiter.hit(key, MINUTE, limit, blockDuration, 'actor');

  beforeEach(() => {
    clock = 1_000_000;
    limiter = new SlidingWindowLimiter(() => clock);
  });

  it('allows the limit within a window and blocks the hit over it, with the time to wait', async () => {
    const results = [await hit(), await hit(), await hit(), await hit()];
    expect(results.map((r) => r.isBlocked)).toEqual([false, false, false, true]);
    expect(results.map((r) => r.totalHits)).toEqual([1, 2, 3, 4]);
    expect(results[3]!.timeToBlockExpire).toBe(60);
    clock += 20_000;
    const later = await hit();
    expect(later.isBlocked).toBe(true);
    expect(later.timeToBlockExpire).toBe(40);
  });

  it('counts keys and budgets apart', async () => {
    for (let i = 0; i < 3; i++) await hit('actor:a');
    expect((await hit('actor:b')).isBlocked).toBe(false);
    expect((await limiter.hit('actor:a', MINUTE, 3, MINUTE, 'project')).isBlocked).toBe(false);
    expect((await hit('actor:a')).isBlocked).toBe(true);
  });

  it('starts afresh when the block ends', async () => {
    for (let i = 0; i < 4; i++) await hit();
    clock += MINUTE;
    const results = [await hit(), await hit(), await hit(), await hit()];
    expect(results.map((r) => r.isBlocked)).toEqual([false, false, false, true]);
  });

  it('still counts the hits of the previous window that the sliding minute covers', async () => {
    for (let i = 0; i < 3; i++) await hit('actor:a', 4);
    // A quarter into the next window, three quarters of the previous one's 3 hits still count (2).
    clock += MINUTE + MINUTE / 4;
    expect((await hit('actor:a', 4)).isBlocked).toBe(false);
    expect((await hit('actor:a', 4)).isBlocked).toBe(false);
    expect((await hit('actor:a', 4)).isBlocked).toBe(true);
  });

  it('without a block duration refuses hits over the limit without counting them', async () => {
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await hit('actor:a', 3, 0));
    expect(results.map((r) => r.isBlocked)).toEqual([false, false, false, true, true]);
    expect(results[4]!.timeToBlockExpire).toBe(60);
    clock += 2 * MINUTE;
    expect((await hit('actor:a', 3, 0)).isBlocked).toBe(false);
  });

  it('forgets keys idle for two windows, and keeps blocked ones', async () => {
    await hit('actor:idle');
    for (let i = 0; i < 4; i++) await hit('actor:blocked', 3, 10 * MINUTE);
    clock += 3 * MINUTE;
    await hit('actor:fresh');
    expect(limiter.size).toBe(2);
    expect((await hit('actor:blocked', 3, 10 * MINUTE)).isBlocked).toBe(true);
  });
});
