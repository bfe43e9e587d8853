/**
 * The websocket upgrade behind a console (`vncwebsocket`): same agent (TLS trust) and same auth
 * headers as every REST call, so the console is opened as the identity that asked for its ticket.
 * Settled like an HTTP exchange (settleOnce), failing with a TryFailure or, for a refused upgrade,
 * with the API error of its answer.
 */
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocket } from 'ws';
import { settleOnce, traceHeader } from '../common/https/exchange';
import { TryFailure, connectionFailure } from '../common/https/try-failure';
import type { CallContext } from '../spi/provider-driver';
import { apiError } from './proxmox-errors';
import { type ProxmoxHttp, encodeParams, type ProxmoxParams } from './proxmox-http';

/** Upgrades to a websocket and answers it as a byte stream, attached from the start. */
export function upgradeToWebSocket(
  http: ProxmoxHttp,
  path: string,
  params: ProxmoxParams,
  authHeaders: Record<string, string>,
  ctx: CallContext,
  operation: string,
): Promise<Duplex> {
  const { endpoint, requestTimeoutMs, now, stats } = http.options;
  stats.requests++;
  const url = `wss://${endpoint.host}${http.apiUrlPath(path)}?${encodeParams(params)}`;
  const headers: Record<string, string> = { ...authHeaders, ...traceHeader(ctx) };

  return new Promise<Duplex>((resolve, reject) => {
    const ws = new WebSocket(url, { agent: http.agent, headers, perMessageDeflate: false, followRedirects: false });
    // Created before the upgrade completes, so no message can arrive before someone listens.
    const stream = createWebSocketStream(ws);
    // Until the caller takes the stream, its errors are this promise's (see the ws listener below).
    stream.on('error', () => undefined);
    const { finish, fail, watchAbort } = settleOnce(ctx, now, requestTimeoutMs, () => ws.terminate(), reject);
    ws.once('open', () => finish(() => resolve(stream)));
    ws.once('unexpected-response', (req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= 64 * 1024) chunks.push(chunk);
      });
      res.on('error', () => fail(new TryFailure('transport', 'ECONNRESET', 'answer cut off')));
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        fail(apiError(res.statusCode ?? 0, res.statusMessage ?? '', body, operation));
        req.destroy();
      });
    });
    // Errors after the upgrade belong to whoever reads the stream; this listener keeps them from crashing the process.
    ws.on('error', (err: NodeJS.ErrnoException) => fail(connectionFailure(err)));
    watchAbort();
  });
}
