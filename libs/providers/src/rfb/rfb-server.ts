/**
 * A minimal RFB server for simulators: after the handshake (acceptRfbClient) it sends ServerInit and
 * serves the client messages of RFC 6143 §7.5 with Raw-encoded pictures of a fixed test image. It
 * answers incremental update requests only when something changed, which for a still picture is
 * never: answering them at once would have clients like noVNC spin at full speed.
 */
import type { Duplex } from 'node:stream';
import { StreamByteReader } from './byte-reader';
import { RfbHandshakeError } from './rfb-error';
import { acceptRfbClient } from './rfb-handshake';
import {
  DEFAULT_PIXEL_FORMAT,
  decodePixelFormat,
  encodePixelFormat,
  rawRectangle,
  type PixelFormat,
} from './rfb-pixels';

export interface RfbServerOptions {
  /** VNC Authentication with this password; security type None when absent. */
  password?: string;
  width?: number;
  height?: number;
  /** Desktop name sent in ServerInit. */
  name?: string;
  /** Handshake (version, security, ClientInit) time limit. Default 10 s. */
  handshakeTimeoutMs?: number;
}

/** How a session ended: the client went away, close() was called, or the client broke the protocol. */
export type RfbSessionEnd = 'client_closed' | 'server_closed' | 'handshake_failed' | 'protocol_error';

const MSG_SET_PIXEL_FORMAT = 0;
const MSG_SET_ENCODINGS = 2;
const MSG_FRAMEBUFFER_UPDATE_REQUEST = 3;
const MSG_KEY_EVENT = 4;
const MSG_POINTER_EVENT = 5;
const MSG_CLIENT_CUT_TEXT = 6;
const ENCODING_RAW = 0;
// Clipboard text beyond this is not a paste but a client gone wrong.
const MAX_CUT_TEXT_BYTES = 16 * 1024 * 1024;

class ProtocolViolation extends Error {}

export class RfbServerSession {
  /** Resolves once the connection is over, with why. */
  readonly ended: Promise<RfbSessionEnd>;
  /** What the client did, for tests and logs. */
  readonly stats = { updates: 0, keyEvents: 0, pointerEvents: 0, cutTextBytes: 0, encodings: [] as number[] };

  private readonly width: number;
  private readonly height: number;
  private pixelFormat: PixelFormat = { ...DEFAULT_PIXEL_FORMAT };
  private closedByServer = false;
  private initialised = false;

  constructor(
    private readonly stream: Duplex,
    private readonly options: RfbServerOptions = {},
  ) {
    this.width = options.width ?? 320;
    this.height = options.height ?? 200;
    // Errors surface as the end of the session; without a listener they would crash the process.
    stream.on('error', () => undefined);
    this.ended = this.run();
  }

  /** Whether the client got past ClientInit. */
  get connected(): boolean {
    return this.initialised && !this.stream.destroyed;
  }

  /** Ends the session from the server's side (the VM stopped, the simulator shuts down). */
  close(): void {
    this.closedByServer = true;
    this.stream.destroy();
  }

  private async run(): Promise<RfbSessionEnd> {
    try {
      await acceptRfbClient(this.stream, {
        password: this.options.password,
        timeoutMs: this.options.handshakeTimeoutMs,
      });
    } catch {
      return this.closedByServer ? 'server_closed' : 'handshake_failed';
    }
    const reader = new StreamByteReader(this.stream);
    try {
      await reader.readUint8(); // ClientInit: the shared flag; every client shares this desktop.
      this.sendServerInit();
      this.initialised = true;
      for (;;) await this.serveMessage(reader);
    } catch (err) {
      reader.detach();
      this.stream.destroy();
      if (this.closedByServer) return 'server_closed';
      return err instanceof RfbHandshakeError ? 'client_closed' : 'protocol_error';
    }
  }

  private sendServerInit(): void {
    const name = Buffer.from(this.options.name ?? 'HCP simulator', 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt16BE(this.width, 0);
    head.writeUInt16BE(this.height, 2);
    const nameLength = Buffer.alloc(4);
    nameLength.writeUInt32BE(name.length, 0);
    this.stream.write(Buffer.concat([head, encodePixelFormat(this.pixelFormat), nameLength, name]));
  }

  private async serveMessage(reader: StreamByteReader): Promise<void> {
    const type = await reader.readUint8();
    switch (type) {
      case MSG_SET_PIXEL_FORMAT: {
        const body = await reader.read(19);
        const format = decodePixelFormat(body.subarray(3));
        if (!format) throw new ProtocolViolation('unsupported pixel format');
        this.pixelFormat = format;
        return;
      }
      case MSG_SET_ENCODINGS: {
        const head = await reader.read(3);
        const count = head.readUInt16BE(1);
        const list = await reader.read(count * 4);
        this.stats.encodings = Array.from({ length: count }, (_, i) => list.readInt32BE(i * 4));
        return;
      }
      case MSG_FRAMEBUFFER_UPDATE_REQUEST: {
        const body = await reader.read(9);
        if (body.readUInt8(0) === 0)
          this.sendUpdate(body.readUInt16BE(1), body.readUInt16BE(3), body.readUInt16BE(5), body.readUInt16BE(7));
        return;
      }
      case MSG_KEY_EVENT:
        await reader.read(7);
        this.stats.keyEvents++;
        return;
      case MSG_POINTER_EVENT:
        await reader.read(5);
        this.stats.pointerEvents++;
        return;
      case MSG_CLIENT_CUT_TEXT: {
        const head = await reader.read(7);
        // A negative length is the extended-clipboard form; its size is the absolute value.
        const length = Math.abs(head.readInt32BE(3));
        if (length > MAX_CUT_TEXT_BYTES) throw new ProtocolViolation('oversized ClientCutText');
        await reader.read(length);
        this.stats.cutTextBytes += length;
        return;
      }
      default:
        // Every other message needs an extension this server never announced.
        throw new ProtocolViolation(`unexpected client message type ${type}`);
    }
  }

  /** A FramebufferUpdate with one Raw rectangle: the requested area, clipped to the framebuffer. */
  private sendUpdate(x: number, y: number, w: number, h: number): void {
    const x0 = Math.min(x, this.width);
    const y0 = Math.min(y, this.height);
    const cw = Math.max(0, Math.min(w, this.width - x0));
    const ch = Math.max(0, Math.min(h, this.height - y0));
    const empty = cw === 0 || ch === 0;
    const header = Buffer.alloc(4);
    header.writeUInt8(0, 0);
    header.writeUInt16BE(empty ? 0 : 1, 2);
    this.stats.updates++;
    if (empty) {
      this.stream.write(header);
      return;
    }
    const rect = Buffer.alloc(12);
    rect.writeUInt16BE(x0, 0);
    rect.writeUInt16BE(y0, 2);
    rect.writeUInt16BE(cw, 4);
    rect.writeUInt16BE(ch, 6);
    rect.writeInt32BE(ENCODING_RAW, 8);
    this.stream.write(
      Buffer.concat([header, rect, rawRectangle(x0, y0, cw, ch, this.width, this.height, this.pixelFormat)]),
    );
  }
}

/** Serves RFB on `stream` until the client leaves or `close()` is called. */
export function serveRfb(stream: Duplex, options: RfbServerOptions = {}): RfbServerSession {
  return new RfbServerSession(stream, options);
}
