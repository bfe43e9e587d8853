import { createWebSocketStream, WebSocket } from 'ws';
import { connectRfbServer, StreamByteReader } from '@hcp/providers';

export interface ServerInit {
  width: number;
  height: number;
  bitsPerPixel: number;
  name: string;
}

export interface ConsoleClient {
  ws: WebSocket;
  serverInit: ServerInit;
  /** Resolves with the close code once the websocket has closed. */
  closed: Promise<number>;
}

export interface RefusedUpgrade {
  status: number;
  body: { error: { code: string; message: string; trace_id: string } };
}

/** `ws://.../websocket` plus the token, as a console client builds it from the session answer. */
const withToken = (url: string, token: string) => `${url}?token=${encodeURIComponent(token)}`;

/**
 * A tenant's VNC client through HCP's proxy: the websocket, then RFB up to ServerInit (HCP offers
 * security None; the provider's password never reaches this side).
 */
export async function connectConsole(url: string, token: string): Promise<ConsoleClient> {
  const ws = new WebSocket(withToken(url, token), ['binary']);
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  // Attached before the upgrade completes: HCP speaks first, maybe in the upgrade's own packet.
  const stream = createWebSocketStream(ws);
  stream.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused with ${res.statusCode}`)));
    ws.once('error', reject);
  });
  const handshake = await connectRfbServer(stream, { timeoutMs: 10_000 });
  if (handshake.security !== 'none') throw new Error(`HCP asked the tenant for RFB security ${handshake.security}`);
  stream.write(Buffer.from([1])); // ClientInit: shared
  const reader = new StreamByteReader(stream);
  const head = await reader.read(24);
  const name = (await reader.read(head.readUInt32BE(20))).toString('utf8');
  reader.release();
  stream.resume();
  return {
    ws,
    closed,
    serverInit: { width: head.readUInt16BE(0), height: head.readUInt16BE(2), bitsPerPixel: head.readUInt8(4), name },
  };
}

/** Tries the upgrade and returns HCP's refusal (status and error envelope); fails if HCP accepts. */
export async function refusedUpgrade(url: string, token: string): Promise<RefusedUpgrade> {
  const ws = new WebSocket(withToken(url, token), ['binary']);
  return new Promise<RefusedUpgrade>((resolve, reject) => {
    ws.once('open', () => {
      ws.terminate();
      reject(new Error('HCP accepted the console connection'));
    });
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        ws.terminate();
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      });
    });
    ws.once('error', (err) => reject(err));
  });
}
