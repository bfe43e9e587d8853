import type { RecordedEvent } from '../event-store.port';

/** Reads each wanted stream from its revision on, in one statement; the events of all of them. */
export type StreamsRead = (wanted: ReadonlyMap<string, bigint>) => Promise<RecordedEvent[]>;

interface Waiter {
  streamId: string;
  fromRevision: bigint;
  resolve: (events: RecordedEvent[]) => void;
  reject: (err: unknown) => void;
}

/**
 * One statement for the whole-stream reads a process asks for at about the same time. A worker's job
 * slots each load the job, the VM, its provider and cluster and the create's request: five round trips
 * per job, each a syscall and a PostgreSQL wake-up on a machine where those are the cost (a 1,000-job
 * burst spent 40 % of the worker's samples in socket writes).
 *
 * Reads asked in one tick go together; at most `maxInFlight` statements run at once, and the reads asked
 * while all of them run go together in the next one. A read asked when a statement is free waits one
 * tick, no more. Every statement starts after the reads it carries were asked, so a read still sees every
 * append that finished before it was asked. A failed statement fails the reads it carried, only those.
 */
export class CoalescedStreamReads {
  private waiting: Waiter[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly readStreams: StreamsRead,
    private readonly maxInFlight = 2,
  ) {}

  read(streamId: string, fromRevision: bigint): Promise<RecordedEvent[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ streamId, fromRevision, resolve, reject });
      if (!this.scheduled && this.inFlight < this.maxInFlight) {
        this.scheduled = true;
        // The reads of one Promise.all, or of the continuations one answer wakes, are asked in one tick.
        process.nextTick(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    if (this.waiting.length === 0 || this.inFlight >= this.maxInFlight) return;
    const batch = this.waiting;
    this.waiting = [];
    this.inFlight += 1;
    const wanted = new Map<string, bigint>();
    for (const { streamId, fromRevision } of batch) {
      const from = wanted.get(streamId);
      if (from === undefined || fromRevision < from) wanted.set(streamId, fromRevision);
    }
    void this.run(batch, wanted);
  }

  private async run(batch: Waiter[], wanted: ReadonlyMap<string, bigint>): Promise<void> {
    try {
      answer(batch, await this.readStreams(wanted));
    } catch (err) {
      // Settling a waiter twice is a no-op: those answered before the failure keep their answer.
      for (const waiter of batch) waiter.reject(err);
    } finally {
      this.inFlight -= 1;
      this.flush();
    }
  }
}

function answer(batch: Waiter[], events: RecordedEvent[]): void {
  const byStream = new Map<string, RecordedEvent[]>();
  for (const event of events) {
    const stream = byStream.get(event.streamId);
    if (stream) stream.push(event);
    else byStream.set(event.streamId, [event]);
  }
  const handedOut = new Set<string>();
  for (const { streamId, fromRevision, resolve } of batch) {
    const stream = (byStream.get(streamId) ?? []).filter((event) => event.revision >= fromRevision);
    // Callers may fold or upcast what they read in place: a second reader of a stream gets its own copy.
    resolve(handedOut.has(streamId) ? structuredClone(stream) : stream);
    handedOut.add(streamId);
  }
}
