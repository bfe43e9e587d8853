import type { CallContext } from '../spi/provider-driver';
import { checkCall, timeoutError } from './call-errors';

/** setTimeout's longest delay; a deadline further away than this is left to the abort signal. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls running and waiting, as an observer hears them after each change. */
export interface SlotUse {
  running: number;
  waiting: number;
}

interface Waiter {
  /** Hands the waiter a slot: the one a finished call gave up, passed on without being freed. */
  admit(): void;
}

/**
 * At most `size` calls at once; the others wait in the order they came. A waiting call whose context is
 * aborted (its job's lease was lost) or reaches its deadline leaves the line with the same PROVIDER_TIMEOUT
 * a driver gives, and never runs. A finished call, failed or not, hands its slot to the first waiter.
 */
export class CallSlots {
  private running = 0;
  private readonly waiting = new Set<Waiter>();

  constructor(
    readonly size: number,
    private readonly observe: (use: SlotUse) => void = () => undefined,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`call slots: size must be a positive integer`);
  }

  /** Calls running now. */
  get busy(): number {
    return this.running;
  }

  /** Calls waiting for a slot now. */
  get queued(): number {
    return this.waiting.size;
  }

  async run<T>(operation: string, ctx: CallContext, work: () => Promise<T>): Promise<T> {
    await this.acquire(operation, ctx);
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private acquire(operation: string, ctx: CallContext): Promise<void> {
    checkCall(ctx, operation, Date.now);
    if (this.running < this.size && this.waiting.size === 0) {
      this.running++;
      this.changed();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (error: Error) => {
        settle();
        reject(error);
      };
      const onAbort = () => leave(timeoutError(operation, 'aborted'));
      const untilDeadline = ctx.deadline.getTime() - Date.now();
      const timer =
        untilDeadline <= MAX_TIMER_MS
          ? setTimeout(() => leave(timeoutError(operation, 'deadline')), untilDeadline)
          : undefined;
      const waiter: Waiter = {
        admit: () => {
          settle();
          resolve();
        },
      };
      const settle = () => {
        this.waiting.delete(waiter);
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', onAbort);
        this.changed();
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.add(waiter);
      this.changed();
    });
  }

  private release(): void {
    // A Set iterates in insertion order: the first waiter is the one that came first.
    const next = this.waiting.values().next();
    if (next.done) {
      this.running--;
      this.changed();
    } else next.value.admit();
  }

  private changed(): void {
    try {
      this.observe({ running: this.running, waiting: this.waiting.size });
    } catch {
      // An observer's failure (a metric) is not the call's.
    }
  }
}
