/** One hit's outcome; times in whole seconds, as Retry-After and the rate-limit headers give them. */
export interface WindowHit {
  /** The key's hits in the sliding window, this one included. */
  totalHits: number;
  /** Until the current window ends. */
  timeToExpire: number;
  isBlocked: boolean;
  /** Until the block ends (0 when not blocked). */
  timeToBlockExpire: number;
}

interface Counter {
  ttl: number;
  /** Start of the current fixed window of `ttl` ms. */
  windowStart: number;
  current: number;
  previous: number;
  /** Refused until then (0: not blocked). */
  blockedUntil: number;
}

/**
 * The rate limiters' memory: two counters per key (this window and the one before), O(1) time and no
 * garbage per hit at any limit (@nestjs/throttler's in-memory storage kept the expiry of every hit of
 * the last window and filtered that array on every request). The count is the usual sliding-window
 * estimate: this window's hits plus the previous window's weighted by how much of it the sliding window
 * still covers. Exact while a key stays in one window. Synchronous: a guard on every request should not
 * cost a promise per budget.
 *
 * The hit that goes over the limit blocks the key for `blockDuration`, blocked requests are not
 * counted, and the key starts afresh when the block ends.
 */
export class SlidingWindowLimiter {
  private readonly counters = new Map<string, Counter>();
  private lastSweep: number;

  constructor(
    private readonly now: () => number = Date.now,
    /** How often idle keys are dropped (amortised over requests: no timer to stop). */
    private readonly sweepEveryMs = 60_000,
  ) {
    this.lastSweep = now();
  }

  /** Counts a hit of `key` under the budget `budget` (keys of different budgets are counted apart). */
  hit(key: string, ttl: number, limit: number, blockDuration: number, budget: string): WindowHit {
    const now = this.now();
    if (now - this.lastSweep >= this.sweepEveryMs) this.sweep(now);
    const id = `${budget}\u0000${key}`;
    let counter = this.counters.get(id);
    if (!counter) {
      counter = { ttl, windowStart: now, current: 0, previous: 0, blockedUntil: 0 };
      this.counters.set(id, counter);
    }
    roll(counter, now, ttl);

    if (counter.blockedUntil > now) {
      return {
        totalHits: estimate(counter, now) + 1,
        timeToExpire: secondsUntil(counter.windowStart + ttl, now),
        isBlocked: true,
        timeToBlockExpire: secondsUntil(counter.blockedUntil, now),
      };
    }
    if (counter.blockedUntil !== 0) {
      Object.assign(counter, { windowStart: now, current: 0, previous: 0, blockedUntil: 0 });
    }

    if (blockDuration <= 0) {
      // No block: a request over the limit is refused and not counted, until the window slides on.
      const hits = estimate(counter, now);
      if (hits >= limit) {
        return {
          totalHits: hits + 1,
          timeToExpire: secondsUntil(counter.windowStart + ttl, now),
          isBlocked: true,
          timeToBlockExpire: secondsUntil(counter.windowStart + ttl, now),
        };
      }
      counter.current += 1;
      return {
        totalHits: hits + 1,
        timeToExpire: secondsUntil(counter.windowStart + ttl, now),
        isBlocked: false,
        timeToBlockExpire: 0,
      };
    }

    counter.current += 1;
    const hits = estimate(counter, now);
    if (hits > limit) counter.blockedUntil = now + blockDuration;
    return {
      totalHits: hits,
      timeToExpire: secondsUntil(counter.windowStart + ttl, now),
      isBlocked: hits > limit,
      timeToBlockExpire: hits > limit ? secondsUntil(counter.blockedUntil, now) : 0,
    };
  }

  /** Keys held now (for tests and metrics). */
  get size(): number {
    return this.counters.size;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [id, counter] of this.counters) {
      // Idle for two windows and not blocked: its count is zero, forgetting it changes nothing.
      if (counter.blockedUntil <= now && now - counter.windowStart >= 2 * counter.ttl) this.counters.delete(id);
    }
  }
}

function roll(counter: Counter, now: number, ttl: number): void {
  counter.ttl = ttl;
  const elapsed = now - counter.windowStart;
  if (elapsed < ttl) return;
  const windows = Math.floor(elapsed / ttl);
  counter.previous = windows === 1 ? counter.current : 0;
  counter.current = 0;
  counter.windowStart += windows * ttl;
}

function estimate(counter: Counter, now: number): number {
  const stillCovered = (counter.ttl - (now - counter.windowStart)) / counter.ttl;
  return Math.floor(counter.previous * stillCovered) + counter.current;
}

function secondsUntil(time: number, now: number): number {
  return Math.max(0, Math.ceil((time - now) / 1000));
}
