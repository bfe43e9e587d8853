/**
 * One bounded HTTPS exchange with a hypervisor API (Proxmox VE's `/api2/json`, vCenter's `/sdk`):
 * sent over the agent that enforces the provider's TLS trust (trusting-agent.ts), its answer capped
 * in size, and settled once by whichever comes first of the answer, the request timeout (or the
 * call's deadline when sooner) and the call's abort signal. No retries, no auth and no reading of
 * the body: each client brings its headers and decides what the answer means.
 */
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { CallContext } from '../../spi/provider-driver';
import type { TlsTrust } from './tls-trust';
import { TryFailure, connectionFailure } from './try-failure';

/**
 * The one outcome of an exchange: whichever comes first of its answer (`finish`), its time limit (the
 * request timeout, or the call's deadline when that is sooner) and the call's abort signal settles it;
 * a failure tears the attempt down with `cancel` first. `watchAbort` starts listening for the abort
 * once the attempt exists, and says whether the call is still on.
 */
export function settleOnce(
  ctx: CallContext,
  now: () => number,
  requestTimeoutMs: number,
  cancel: () => void,
  reject: (error: Error) => void,
) {
  const remaining = ctx.deadline.getTime() - now();
  const cutByDeadline = remaining <= requestTimeoutMs;
  let done = false;
  const finish = (fn: () => void) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onAbort);
    fn();
  };
  const fail = (error: Error) =>
    finish(() => {
      cancel();
      reject(error);
    });
  const onAbort = () => fail(new TryFailure('aborted', 'ABORTED', 'aborted'));
  const timer = setTimeout(
    () => fail(new TryFailure(cutByDeadline ? 'deadline' : 'timeout', 'ETIMEDOUT', 'timed out')),
    Math.max(1, Math.min(requestTimeoutMs, remaining)),
  );
  const watchAbort = (): boolean => {
    if (ctx.signal.aborted) {
      onAbort();
      return false;
    }
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    return true;
  };
  return { finish, fail, watchAbort };
}

/** The `X-Request-Id` of an exchange, when the call carries a trace id fit for a header. */
export function traceHeader(ctx: CallContext): Record<string, string> {
  // The HCP request behind this call, for whoever reads the provider's (or its proxy's) access log.
  return ctx.trace_id && /^[\x21-\x7e]{1,128}$/.test(ctx.trace_id) ? { 'X-Request-Id': ctx.trace_id } : {};
}

/** What a client of one hypervisor API is built with, for its agent and every exchange. */
export interface HttpsClientOptions {
  endpoint: URL;
  tls: TlsTrust;
  /** TCP + TLS handshake. */
  connectTimeoutMs: number;
  /** Upper bound of one exchange; the call's deadline may cut it shorter. */
  requestTimeoutMs: number;
  maxBodyBytes: number;
  now: () => number;
  /** The client's counters; every exchange (and websocket upgrade) counts as a request. */
  stats: { requests: number };
}

export interface HttpsRequest {
  /** The agent that enforces the provider's TLS trust (createTrustingAgent). */
  agent: https.Agent;
  /** Host and port of the API (443 when the URL has none); its path is not used. */
  endpoint: URL;
  method: string;
  path: string;
  /** Every header of the request, Content-Length included when there is a body. */
  headers: Record<string, string | number>;
  body?: Buffer;
  /** An answer larger than this fails the try (BODY_TOO_LARGE) instead of filling memory. */
  maxBodyBytes: number;
  /** Upper bound of this try; the call's deadline may cut it shorter. */
  requestTimeoutMs: number;
  now: () => number;
}

export interface HttpsAnswer {
  status: number;
  /** The reason phrase of the status line. */
  reason: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTPS exchange. Throws TryFailure for anything that is not a whole HTTP answer. */
export function httpsExchange(request: HttpsRequest, ctx: CallContext): Promise<HttpsAnswer> {
  const { endpoint, maxBodyBytes } = request;
  return new Promise<HttpsAnswer>((resolve, reject) => {
    const { finish, fail, watchAbort } = settleOnce(
      ctx,
      request.now,
      request.requestTimeoutMs,
      () => req.destroy(),
      reject,
    );
    const req = https.request(
      {
        protocol: 'https:',
        hostname: endpoint.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: Number(endpoint.port) || 443,
        method: request.method,
        path: request.path,
        headers: request.headers,
        agent: request.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBodyBytes) {
            fail(new TryFailure('transport', 'BODY_TOO_LARGE', 'answer too large'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('aborted', () => fail(new TryFailure('transport', 'ECONNRESET', 'answer cut off')));
        res.on('close', () => {
          if (!res.complete) fail(new TryFailure('transport', 'ECONNRESET', 'answer cut off'));
        });
        res.on('error', (err: NodeJS.ErrnoException) =>
          fail(new TryFailure('transport', err.code ?? 'ECONNRESET', 'answer cut off')),
        );
        res.on('end', () =>
          finish(() =>
            resolve({
              status: res.statusCode ?? 0,
              reason: res.statusMessage ?? '',
              headers: res.headers,
              body: Buffer.concat(chunks),
            }),
          ),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => fail(connectionFailure(err)));
    if (watchAbort()) req.end(request.body);
  });
}
