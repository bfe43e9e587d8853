import type { AppendResult, StreamAppend } from '../event-store.port';

/** Commits several appendMany calls in one transaction; one settled result per call, in order. */
export type AppendCalls = (calls: StreamAppend[][]) => Promise<Array<PromiseSettledResult<AppendResult[]>>>;

interface Waiter {
  call: StreamAppend[];
  resolve: (results: AppendResult[]) => void;
  reject: (err: unknown) => void;
}

/** Bounds one transaction's statement: the calls of a burst beyond it wait for the next one. */
const MAX_CALLS = 64;
const MAX_EVENTS = 1_000;

/**
 * Group commit for the appends a process asks for at about the same time. A worker's job slots each
 * record the attempt's start and its outcome: two transactions per job, four round trips, each a
 * syscall and a PostgreSQL wake-up on a machine where those are the cost (bench/README.md). Calls asked
 * in one tick, or while every transaction slot is busy, commit together.
 *
 * Each call stays a transaction of its own to its caller: it commits whole or not at all, and a call
 * refused (its expectation failed) is refused alone. Two calls on one stream, or carrying one event id,
 * never share a transaction: the later one waits for the next, and so does every call after it that
 * touches one of the same streams, so the appends to a stream keep the order they were asked in.
 */
export class CoalescedAppends {
  private waiting: Waiter[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly appendCalls: AppendCalls,
    private readonly maxInFlight = 2,
  ) {}

  append(call: StreamAppend[]): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ call, resolve, reject });
      if (!this.scheduled && this.inFlight < this.maxInFlight) {
        this.scheduled = true;
        // The appends of one Promise.all, or of the continuations one commit wakes, are asked in one tick.
        process.nextTick(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.take();
      this.inFlight += 1;
      void this.run(batch);
    }
  }

  /** The waiting calls that can share a transaction, in the order they were asked; the rest keep waiting. */
  private take(): Waiter[] {
    const batch: Waiter[] = [];
    const left: Waiter[] = [];
    const claimed = new Set<string>();
    let events = 0;
    for (const waiter of this.waiting) {
      const keys = keysOf(waiter.call);
      const size = waiter.call.reduce((n, append) => n + append.events.length, 0);
      const fits = batch.length === 0 || (batch.length < MAX_CALLS && events + size <= MAX_EVENTS);
      if (fits && !keys.some((key) => claimed.has(key))) {
        batch.push(waiter);
        events += size;
      } else {
        left.push(waiter);
      }
      // A call left waiting still claims its streams: no later call on them may overtake it.
      for (const key of keys) claimed.add(key);
    }
    this.waiting = left;
    return batch;
  }

  private async run(batch: Waiter[]): Promise<void> {
    try {
      const results = await this.appendCalls(batch.map((waiter) => waiter.call));
      for (const [i, waiter] of batch.entries()) {
        const result = results[i];
        if (result?.status === 'fulfilled') waiter.resolve(result.value);
        else waiter.reject(result ? result.reason : new Error('an append call got no result'));
      }
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    } finally {
      this.inFlight -= 1;
      this.flush();
    }
  }
}

/** The streams and event ids of a call: what two calls of one transaction must not share. */
function keysOf(call: StreamAppend[]): string[] {
  return call.flatMap((append) => [
    `stream:${append.streamId}`,
    ...append.events.map((event) => `event:${event.id.toLowerCase()}`),
  ]);
}
