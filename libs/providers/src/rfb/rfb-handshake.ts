/**
 * Both ends of the RFB (VNC) handshake up to ClientInit (RFC 6143 §7.1–7.2): ProtocolVersion,
 * security negotiation, security type None or VNC Authentication, SecurityResult.
 *
 * Versions 3.3, 3.7 and 3.8 differ in how security is negotiated: 3.3 lets the server impose one
 * type, 3.7 and 3.8 let the client pick from a list; 3.8 alone sends a SecurityResult after None and
 * a reason string after a failed one. On success the stream is handed back paused and positioned at
 * ClientInit; on failure it is destroyed (a half-done handshake cannot be resumed).
 */
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { StreamByteReader } from './byte-reader';
import { RfbHandshakeError } from './rfb-error';
import { VNC_CHALLENGE_BYTES, checkVncAuthResponse, vncAuthResponse } from './vnc-auth';

export type RfbVersion = '3.3' | '3.7' | '3.8';

export const RFB_SECURITY_NONE = 1;
export const RFB_SECURITY_VNC = 2;

const DEFAULT_TIMEOUT_MS = 10_000;
// Reason strings come from the other side; a longer one is not a reason but an attack or garbage.
const MAX_REASON_BYTES = 4096;
const VERSION_LINE = /^RFB (\d{3})\.(\d{3})\n$/;

export interface AcceptRfbClientOptions {
  /** VNC Authentication with this password; security type None when absent. */
  password?: string;
  /** The whole handshake must finish within this time. Default 10 s. */
  timeoutMs?: number;
  /** Sent to 3.8 clients whose VNC response is wrong. */
  failureReason?: string;
}

export interface ConnectRfbServerOptions {
  /** Used when the server asks for VNC Authentication. */
  password?: string;
  timeoutMs?: number;
}

export interface RfbHandshakeResult {
  version: RfbVersion;
  security: 'none' | 'vnc';
}

function versionLine(version: RfbVersion): Buffer {
  return Buffer.from(`RFB 003.00${version.slice(2)}\n`, 'latin1');
}

/** RFC 6143 §7.1.1: unknown 3.x minors count as 3.3, anything from 3.8 up as 3.8. */
function parseVersion(bytes: Buffer): RfbVersion {
  const m = VERSION_LINE.exec(bytes.toString('latin1'));
  if (!m || Number(m[1]) !== 3) throw new RfbHandshakeError('protocol', 'the peer does not speak RFB 3.x');
  const minor = Number(m[2]);
  if (minor >= 8) return '3.8';
  return minor === 7 ? '3.7' : '3.3';
}

function uint32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value, 0);
  return b;
}

function reasonMessage(text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  return Buffer.concat([uint32(body.length), body]);
}

async function readReason(reader: StreamByteReader): Promise<string> {
  const length = await reader.readUint32();
  if (length > MAX_REASON_BYTES) throw new RfbHandshakeError('protocol', 'the peer sent an oversized reason string');
  return (await reader.read(length)).toString('utf8');
}

/** Runs `steps` with a reader and an overall timeout; releases the stream on success, destroys it on failure. */
async function handshake<T>(
  stream: Duplex,
  timeoutMs: number,
  steps: (reader: StreamByteReader) => Promise<T>,
): Promise<T> {
  const reader = new StreamByteReader(stream);
  const timer = setTimeout(
    () => reader.fail(new RfbHandshakeError('timeout', 'the RFB handshake did not finish in time')),
    timeoutMs,
  );
  try {
    const result = await steps(reader);
    reader.release();
    return result;
  } catch (err) {
    reader.detach();
    stream.destroy();
    if (err instanceof RfbHandshakeError) throw err;
    throw new RfbHandshakeError('protocol', 'the RFB handshake failed');
  } finally {
    clearTimeout(timer);
  }
}

/** Flushes what was written before destroying the stream, so the peer reads the failure reason. */
function endWith(stream: Duplex, bytes: Buffer): Promise<void> {
  return new Promise((resolve) => stream.end(bytes, () => resolve()));
}

/**
 * Server side: offers 3.8, then None (no password) or VNC Authentication. Resolves once the client
 * is authenticated, with the stream paused at ClientInit.
 */
export function acceptRfbClient(stream: Duplex, options: AcceptRfbClientOptions = {}): Promise<RfbHandshakeResult> {
  const offered = options.password === undefined ? RFB_SECURITY_NONE : RFB_SECURITY_VNC;
  return handshake(stream, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, async (reader) => {
    stream.write(versionLine('3.8'));
    const version = parseVersion(await reader.read(12));

    if (version === '3.3') {
      stream.write(uint32(offered));
    } else {
      stream.write(Buffer.from([1, offered]));
      const chosen = await reader.readUint8();
      if (chosen !== offered) {
        if (version === '3.8')
          await endWith(stream, Buffer.concat([uint32(1), reasonMessage('security type not offered')]));
        throw new RfbHandshakeError('unsupported_security', 'the client chose a security type that was not offered');
      }
    }

    if (offered === RFB_SECURITY_NONE) {
      if (version === '3.8') stream.write(uint32(0));
      return { version, security: 'none' as const };
    }

    const challenge = randomBytes(VNC_CHALLENGE_BYTES);
    stream.write(challenge);
    const response = await reader.read(VNC_CHALLENGE_BYTES);
    if (!checkVncAuthResponse(challenge, response, options.password!)) {
      const failed =
        version === '3.8'
          ? Buffer.concat([uint32(1), reasonMessage(options.failureReason ?? 'authentication failed')])
          : uint32(1);
      await endWith(stream, failed);
      throw new RfbHandshakeError('auth_failed', 'the client failed VNC authentication');
    }
    stream.write(uint32(0));
    return { version, security: 'vnc' as const };
  });
}

/**
 * Client side: answers with min(server version, 3.8), picks None when offered, else VNC
 * Authentication with `password`. Resolves once the server accepted, with the stream paused at the
 * point where the client sends ClientInit.
 */
export function connectRfbServer(stream: Duplex, options: ConnectRfbServerOptions = {}): Promise<RfbHandshakeResult> {
  return handshake(stream, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, async (reader) => {
    const version = parseVersion(await reader.read(12));
    stream.write(versionLine(version));

    let security: number;
    if (version === '3.3') {
      security = await reader.readUint32();
      if (security === 0) {
        await readReason(reader);
        throw new RfbHandshakeError('protocol', 'the RFB server refused the connection');
      }
    } else {
      const count = await reader.readUint8();
      if (count === 0) {
        await readReason(reader);
        throw new RfbHandshakeError('protocol', 'the RFB server refused the connection');
      }
      const types = [...(await reader.read(count))];
      if (types.includes(RFB_SECURITY_NONE)) security = RFB_SECURITY_NONE;
      else if (types.includes(RFB_SECURITY_VNC) && options.password !== undefined) security = RFB_SECURITY_VNC;
      else
        throw new RfbHandshakeError(
          'unsupported_security',
          'the RFB server offers no security type this client can use',
        );
      stream.write(Buffer.from([security]));
    }

    if (security === RFB_SECURITY_VNC) {
      if (options.password === undefined) {
        throw new RfbHandshakeError(
          'unsupported_security',
          'the RFB server asks for VNC authentication and no password is known',
        );
      }
      const challenge = await reader.read(VNC_CHALLENGE_BYTES);
      stream.write(vncAuthResponse(challenge, options.password));
    } else if (security !== RFB_SECURITY_NONE) {
      throw new RfbHandshakeError(
        'unsupported_security',
        'the RFB server imposes a security type this client cannot use',
      );
    }

    if (security === RFB_SECURITY_VNC || version === '3.8') {
      const result = await reader.readUint32();
      if (result !== 0) {
        if (version === '3.8') await readReason(reader).catch(() => '');
        throw new RfbHandshakeError('auth_failed', 'the RFB server refused the authentication');
      }
    }
    return { version, security: security === RFB_SECURITY_VNC ? ('vnc' as const) : ('none' as const) };
  });
}
