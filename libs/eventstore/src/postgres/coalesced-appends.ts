import type { AppendResult, StreamAppend } from '../event-store.port';
import { TickBatches } from './tick-batches';

/** Commits several appendMany calls in one transaction; one settled result per call, in order. */
export type AppendCalls = (calls: StreamAppend[][]) => Promise<Array<PromiseSettledResult<AppendResult[]>>>;

/** Bounds one transaction's statement: the calls of a burst beyond it wait for the next one. */
const MAX_CALLS = 64;
const MAX_EVENTS = 1_000;

/**
 * Group commit for the appends a process asks for at about the same time. A worker's job slots each
 * record the attempt's start and its outcome: two transactions per job, four round trips, each a
 * syscall and a PostgreSQL wake-up on a machine where those are the cost (bench/README.md). Calls asked
 * in one tick, or while every transaction slot is busy, commit together (TickBatches).
 *
 * Each call stays a transaction of its own to its caller: it commits whole or not at all, and a call
 * refused (its expectation failed) is refused alone. Two calls on one stream, or carrying one event id,
 * never share a transaction: the later one waits for the next, and so does every call after it that
 * touches one of the same streams, so the appends to a stream keep the order they were asked in.
 */
export class CoalescedAppends {
  private readonly batches: TickBatches<StreamAppend[], AppendResult[]>;

  constructor(appendCalls: AppendCalls, maxInFlight = 2) {
    this.batches = new TickBatches(appendCalls, maxInFlight, takeDisjoint);
  }

  append(call: StreamAppend[]): Promise<AppendResult[]> {
    return this.batches.ask(call);
  }
}

/** The waiting calls that can share a transaction, in the order they were asked; the rest keep waiting. */
function takeDisjoint(waiting: readonly StreamAppend[][]): ReadonlySet<number> {
  const taken = new Set<number>();
  const claimed = new Set<string>();
  let events = 0;
  for (const [i, call] of waiting.entries()) {
    const keys = keysOf(call);
    const size = call.reduce((n, append) => n + append.events.length, 0);
    const fits = taken.size === 0 || (taken.size < MAX_CALLS && events + size <= MAX_EVENTS);
    if (fits && !keys.some((key) => claimed.has(key))) {
      taken.add(i);
      events += size;
    }
    // A call left waiting still claims its streams: no later call on them may overtake it.
    for (const key of keys) claimed.add(key);
  }
  return taken;
}

/** The streams and event ids of a call: what two calls of one transaction must not share. */
function keysOf(call: StreamAppend[]): string[] {
  return call.flatMap((append) => [
    `stream:${append.streamId}`,
    ...append.events.map((event) => `event:${event.id.toLowerCase()}`),
  ]);
}
