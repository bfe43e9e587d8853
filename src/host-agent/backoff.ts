export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Share of each delay drawn at random (0..1), so a fleet of agents does not retry in step. */
  jitter?: number;
  random?: () => number;
}

/** Exponential backoff for the agent's loops: doubles from `initialMs` up to `maxMs`, reset on success. */
export class Backoff {
  private attempt = 0;

  constructor(private readonly options: BackoffOptions) {}

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const { initialMs, maxMs, jitter = 0, random = Math.random } = this.options;
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt += 1;
    return Math.round(base * (1 - jitter * random()));
  }

  reset(): void {
    this.attempt = 0;
  }

  get failures(): number {
    return this.attempt;
  }
}

/** Resolves after `ms`, or at once when `signal` fires (a loop told to stop does not sit out its delay). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
