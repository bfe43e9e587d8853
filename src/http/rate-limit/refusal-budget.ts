import type { RequestRefusalsSuppressed } from '@hcp/domain';
import { SlidingWindowLimiter } from './sliding-window-limiter';

export interface RefusalBudgetLimits {
  /** Refusals recorded one by one per key (client address, actor) and window. */
  recordedPerWindow: number;
  /** Refused anonymous requests per client address and window before they are answered 429. */
  anonymousPerWindow: number;
  windowMs: number;
  /** Most keys with uncounted refusals held between summaries; the rest share one summary. */
  maxPendingKeys?: number;
}

export interface Refusal {
  /** The client address (`req.ip`); null when unknown. */
  address: string | null;
  /** The verified actor; null for anonymous callers. */
  actor: string | null;
  code: string;
}

/**
 * `record`: append the refusal event. `count`: answer it as usual but only count it (summary).
 * `reject`: an anonymous flood past the higher budget: answer 429 RATE_LIMITED, Retry-After seconds.
 */
export type RefusalVerdict = { kind: 'record' } | { kind: 'count' } | { kind: 'reject'; retryAfterSeconds: number };

export type RefusalSummary = RequestRefusalsSuppressed['data'];

interface Pending {
  client_address: string | null;
  actor: string | null;
  since: number;
  suppressed: number;
  rate_limited: number;
  codes: Record<string, number>;
}

const DEFAULT_MAX_PENDING_KEYS = 10_000;
/** Where refusals of keys beyond `maxPendingKeys` are counted: bounded memory, still counted. */
const OVERFLOW_KEY = 'overflow';

/**
 * How many refusals HCP writes: each refusal costs a stored event otherwise, so a flood of bad tokens
 * would be a flood of writes, and anonymous requests are not rate-limited anywhere else. Per client
 * address and per actor, the first `recordedPerWindow` refusals of a window are recorded one by one;
 * the next are counted into one summary per key, written by `takeSummaries` at the end of the window.
 * Anonymous refusals past `anonymousPerWindow` from one address are answered 429 without any write.
 *
 * Counters are the rate limiter's sliding windows (two numbers per key, O(1) per refusal) and, like
 * the rate limits, per process.
 */
export class RefusalBudget {
  private readonly limiter: SlidingWindowLimiter;
  private pending = new Map<string, Pending>();

  constructor(
    private readonly limits: RefusalBudgetLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.limiter = new SlidingWindowLimiter(now, limits.windowMs);
  }

  async judge(refusal: Refusal): Promise<RefusalVerdict> {
    const keys: Array<{ key: string; address: string | null; actor: string | null }> = [];
    if (refusal.address !== null)
      keys.push({ key: `address:${refusal.address}`, address: refusal.address, actor: null });
    if (refusal.actor !== null) keys.push({ key: `actor:${refusal.actor}`, address: null, actor: refusal.actor });
    const { windowMs } = this.limits;

    if (refusal.actor === null && refusal.address !== null) {
      const answered = this.limiter.hit(keys[0].key, windowMs, this.limits.anonymousPerWindow, 0, 'refusals-answered');
      if (answered.isBlocked) {
        this.count(keys[0], refusal.code, true);
        return { kind: 'reject', retryAfterSeconds: Math.max(1, answered.timeToBlockExpire) };
      }
    }
    // The first key out of budget stops the walk: the refusal is counted once, under that key.
    for (const k of keys) {
      const recorded = this.limiter.hit(k.key, windowMs, this.limits.recordedPerWindow, 0, 'refusals-recorded');
      if (recorded.isBlocked) {
        this.count(k, refusal.code, false);
        return { kind: 'count' };
      }
    }
    return { kind: 'record' };
  }

  /** The counted refusals since the last call, one summary per key, and forgets them. */
  takeSummaries(): RefusalSummary[] {
    const pending = this.pending;
    this.pending = new Map();
    const end = new Date(this.now()).toISOString();
    return [...pending.values()].map((p) => ({
      client_address: p.client_address,
      actor: p.actor,
      window_start: new Date(p.since).toISOString(),
      window_end: end,
      suppressed: p.suppressed,
      rate_limited: p.rate_limited,
      codes: p.codes,
    }));
  }

  private count(k: { key: string; address: string | null; actor: string | null }, code: string, rateLimited: boolean) {
    let key = k.key;
    let entry = this.pending.get(key);
    if (!entry && this.pending.size >= (this.limits.maxPendingKeys ?? DEFAULT_MAX_PENDING_KEYS)) {
      key = OVERFLOW_KEY;
      entry = this.pending.get(key);
      k = { key, address: null, actor: null };
    }
    if (!entry) {
      entry = {
        client_address: k.address,
        actor: k.actor,
        since: this.now(),
        suppressed: 0,
        rate_limited: 0,
        codes: {},
      };
      this.pending.set(key, entry);
    }
    entry.suppressed += 1;
    if (rateLimited) entry.rate_limited += 1;
    entry.codes[code] = (entry.codes[code] ?? 0) + 1;
  }
}
