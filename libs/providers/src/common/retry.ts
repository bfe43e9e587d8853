/**
 * When a client tries a call again, and how long it waits first: exponential backoff with jitter,
 * never past the call's deadline and not after its abort. Which failures are worth another try is
 * the client's to say (each provider fails in its own words).
 */
import type { CallContext } from '../spi/provider-driver';

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

export interface RetryBackoffOptions {
  /** Tries of a retryable call, including the first. */
  maxAttempts: number;
  /** First retry delay; doubles each time (with jitter). */
  retryBaseMs: number;
  now: () => number;
  random: () => number;
  stats: { retries: number };
}

export class RetryBackoff {
  constructor(private readonly options: RetryBackoffOptions) {}

  /** Waits before the try after `attempt`; false when no try is left or the deadline would pass first. */
  async tryAgain(attempt: number, ctx: CallContext): Promise<boolean> {
    return attempt < this.options.maxAttempts && (await this.backoff(attempt, ctx));
  }

  private async backoff(attempt: number, ctx: CallContext): Promise<boolean> {
    const delay = this.options.retryBaseMs * 2 ** (attempt - 1) * (0.75 + this.options.random() * 0.5);
    if (this.options.now() + delay >= ctx.deadline.getTime()) return false;
    this.options.stats.retries++;
    await sleep(delay, ctx.signal);
    return !ctx.signal.aborted;
  }
}
