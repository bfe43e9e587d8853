/**
 * Two connected in-memory Duplex streams: what one writes, the other reads. Node 22 has
 * `stream.duplexPair`; HCP runs on Node 20. Ending or destroying one side ends the other once it
 * has read what was sent before, and the other then closes, as a socket whose peer closed would.
 */
import { Duplex } from 'node:stream';

class PairEnd extends Duplex {
  peer: PairEnd | undefined;

  constructor() {
    super({ allowHalfOpen: false });
  }

  override _read(): void {
    // Data is pushed by the peer's writes.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.peer && !this.peer.destroyed) this.peer.push(chunk);
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.peer && !this.peer.destroyed) this.peer.push(null);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    this.peer = undefined;
    // Like a socket whose far end closed: the peer still reads what was sent, then its end; it is
    // not half-open, so it then closes too.
    if (peer && !peer.destroyed) {
      peer.peer = undefined;
      peer.push(null);
    }
    callback(error);
  }
}

export function createDuplexPair(): [Duplex, Duplex] {
  const a = new PairEnd();
  const b = new PairEnd();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
