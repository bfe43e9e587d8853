/**
 * When the client tries a call again, and how long it waits first. Which failures are safe to repeat
 * depends on the call (see ProxmoxClient.withRetries and the login in proxmox-auth.ts); this holds
 * what they share: the statuses worth another try and the backoff within the call's deadline.
 */
import type { CallContext } from '../spi/provider-driver';

// Statuses worth a second try of an idempotent call: gateway trouble and pveproxy's pseudo statuses.
export const RETRY_STATUSES = new Set([502, 503, 504, 595, 596, 597, 599]);
const RETRY_500_MESSAGES = [/got no worker upid/i, /try again/i];

/** An error answer that may go away by itself (the same call may then succeed). */
export function isTransientAnswer(status: number, providerMessage: string): boolean {
  return RETRY_STATUSES.has(status) || (status === 500 && RETRY_500_MESSAGES.some((p) => p.test(providerMessage)));
}

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

export interface ProxmoxRetryOptions {
  /** Tries of a retryable call, including the first. */
  maxAttempts: number;
  /** First retry delay; doubles each time (with jitter). */
  retryBaseMs: number;
  now: () => number;
  random: () => number;
  stats: { retries: number };
}

export class ProxmoxRetry {
  constructor(private readonly options: ProxmoxRetryOptions) {}

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
