import type { StreamRead } from './event-store.port';
import { assertStreamId } from './stream-id';

/**
 * What every adapter checks before a readStreams: ids well formed (as append refuses them), each stream
 * once, so the answer's map has one entry per request and no two reads of a stream can disagree.
 */
export function assertStreamReads(reads: readonly StreamRead[]): void {
  const seen = new Set<string>();
  for (const { streamId, fromRevision } of reads) {
    assertStreamId(streamId);
    if (seen.has(streamId)) throw new TypeError(`stream ${streamId} appears twice in one readStreams`);
    seen.add(streamId);
    if (fromRevision !== undefined && fromRevision < 0n)
      throw new TypeError(`stream ${streamId}: fromRevision ${fromRevision} is negative`);
  }
}
