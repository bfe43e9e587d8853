/**
 * Reads exact byte counts from a Duplex while a protocol handshake runs. When the handshake is over,
 * `release()` stops reading, pauses the stream and puts back whatever arrived beyond the handshake,
 * so whoever takes the stream over (a pipe, a relay) starts at exactly the next byte.
 */
import type { Duplex } from 'node:stream';
import { RfbHandshakeError } from './rfb-error';

interface PendingRead {
  size: number;
  resolve: (bytes: Buffer) => void;
  reject: (error: Error) => void;
}

export class StreamByteReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private pending: PendingRead | undefined;
  private failure: Error | undefined;
  private released = false;

  private readonly onData = (chunk: Buffer) => {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.serve();
  };
  private readonly onEnd = () =>
    this.fail(new RfbHandshakeError('closed', 'the connection closed during the RFB handshake'));
  private readonly onError = () =>
    this.fail(new RfbHandshakeError('closed', 'the connection failed during the RFB handshake'));

  constructor(private readonly stream: Duplex) {
    stream.on('data', this.onData);
    stream.on('end', this.onEnd);
    stream.on('close', this.onEnd);
    stream.on('error', this.onError);
    // A stream handed over by an earlier reader is paused explicitly; a data listener alone would not resume it.
    stream.resume();
    if (stream.destroyed || stream.readableEnded) this.onEnd();
  }

  /** Resolves with exactly `size` bytes, or rejects when the stream closes first or the reader fails. */
  read(size: number): Promise<Buffer> {
    if (this.released) return Promise.reject(new Error('the reader was released'));
    if (this.pending) return Promise.reject(new Error('one read at a time'));
    return new Promise<Buffer>((resolve, reject) => {
      this.pending = { size, resolve, reject };
      this.serve();
    });
  }

  async readUint8(): Promise<number> {
    return (await this.read(1)).readUInt8(0);
  }

  async readUint32(): Promise<number> {
    return (await this.read(4)).readUInt32BE(0);
  }

  /** Makes the pending read and every later one reject with `error` (timeouts, refusals). */
  fail(error: Error): void {
    if (this.failure || this.released) return;
    this.failure = error;
    this.serve();
  }

  /** Stops reading and hands the stream back paused, with unread bytes put back in front. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.stream.pause();
    this.detach();
    const rest = this.takeAll();
    if (rest.length > 0 && !this.stream.destroyed) this.stream.unshift(rest);
  }

  /** Stops listening without giving anything back (the stream is being closed anyway). */
  detach(): void {
    this.stream.off('data', this.onData);
    this.stream.off('end', this.onEnd);
    this.stream.off('close', this.onEnd);
    this.stream.off('error', this.onError);
  }

  private serve(): void {
    const pending = this.pending;
    if (!pending) return;
    if (this.buffered >= pending.size) {
      this.pending = undefined;
      pending.resolve(this.take(pending.size));
    } else if (this.failure) {
      this.pending = undefined;
      pending.reject(this.failure);
    }
  }

  private take(size: number): Buffer {
    const all = this.takeAll();
    const head = all.subarray(0, size);
    const rest = all.subarray(size);
    if (rest.length > 0) {
      this.chunks = [rest];
      this.buffered = rest.length;
    }
    return head;
  }

  private takeAll(): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.chunks = [];
    this.buffered = 0;
    return all;
  }
}
