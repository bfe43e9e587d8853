import type { RecordedEvent } from '../event-store.port';
import { TickBatches } from './tick-batches';

/** Reads each wanted stream from its revision on, in one statement; the events of all of them. */
export type StreamsRead = (wanted: ReadonlyMap<string, bigint>) => Promise<RecordedEvent[]>;

interface StreamReadRequest {
  streamId: string;
  fromRevision: bigint;
}

/**
 * One statement for the whole-stream reads a process asks for at about the same time. A worker's job
 * slots each load the job, the VM, its provider and cluster and the create's request: five round trips
 * per job, each a syscall and a PostgreSQL wake-up on a machine where those are the cost (a 1,000-job
 * burst spent 40 % of the worker's samples in socket writes).
 *
 * Reads asked in one tick go together; at most `maxInFlight` statements run at once, and the reads asked
 * while all of them run go together in the next one (TickBatches). Every statement starts after the
 * reads it carries were asked, so a read still sees every append that finished before it was asked. A
 * failed statement fails the reads it carried, only those.
 */
export class CoalescedStreamReads {
  private readonly batches: TickBatches<StreamReadRequest, RecordedEvent[]>;

  constructor(readStreams: StreamsRead, maxInFlight = 2) {
    this.batches = new TickBatches(async (batch) => {
      const wanted = new Map<string, bigint>();
      for (const { streamId, fromRevision } of batch) {
        const from = wanted.get(streamId);
        if (from === undefined || fromRevision < from) wanted.set(streamId, fromRevision);
      }
      return answer(batch, await readStreams(wanted));
    }, maxInFlight);
  }

  read(streamId: string, fromRevision: bigint): Promise<RecordedEvent[]> {
    return this.batches.ask({ streamId, fromRevision });
  }
}

function answer(batch: StreamReadRequest[], events: RecordedEvent[]): Array<PromiseSettledResult<RecordedEvent[]>> {
  const byStream = new Map<string, RecordedEvent[]>();
  for (const event of events) {
    const stream = byStream.get(event.streamId);
    if (stream) stream.push(event);
    else byStream.set(event.streamId, [event]);
  }
  const handedOut = new Set<string>();
  return batch.map(({ streamId, fromRevision }) => {
    const stream = (byStream.get(streamId) ?? []).filter((event) => event.revision >= fromRevision);
    // Callers may fold or upcast what they read in place: a second reader of a stream gets its own copy.
    const value = handedOut.has(streamId) ? structuredClone(stream) : stream;
    handedOut.add(streamId);
    return { status: 'fulfilled', value };
  });
}
