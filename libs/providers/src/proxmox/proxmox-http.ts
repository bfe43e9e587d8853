/**
 * One HTTP exchange with the Proxmox VE API (`/api2/json`), with no retries and no auth of its own:
 * the caller brings the auth headers (proxmox-auth.ts) and decides what a failure is worth
 * (proxmox-client.ts). Whatever is not an HTTP answer comes out as a TryFailure, so the one place that
 * turns failures into taxonomy errors (failureToError) sees every kind.
 */
import https from 'node:https';
import { HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxTls } from './proxmox-config';
import { timeoutError, transportError } from './proxmox-errors';
import { TlsTrustError, createProxmoxAgent, isTlsTrustFailure } from './proxmox-tls';

export type ProxmoxMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type ProxmoxParams = Record<string, string | number | boolean | undefined | null>;

export interface RawAnswer {
  status: number;
  reason: string;
  body: unknown;
}

/** Thrown inside one try; the retry loop decides what it becomes. */
export class TryFailure extends Error {
  constructor(
    readonly kind: 'connect' | 'transport' | 'timeout' | 'aborted' | 'deadline' | 'trust',
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// Failures while connecting: nothing has been sent, so any request may be tried again.
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

/** What a socket error says about an exchange: the certificate is not trusted, the connect failed, or the connection broke. */
export function connectionFailure(err: NodeJS.ErrnoException): TryFailure {
  const code = err instanceof TlsTrustError ? err.code : (err.code ?? 'ECONNRESET');
  if (err instanceof TlsTrustError || isTlsTrustFailure(code))
    return new TryFailure('trust', code, 'untrusted certificate');
  if (CONNECT_CODES.has(code)) return new TryFailure('connect', code, 'connect failed');
  if (code === 'ETIMEDOUT') return new TryFailure('connect', code, 'connect timed out');
  return new TryFailure('transport', code, 'connection failed');
}

export function failureToError(err: TryFailure, operation: string, ctx: CallContext, now: () => number): HcpError {
  switch (err.kind) {
    case 'aborted':
      return timeoutError(operation, 'aborted');
    case 'deadline':
      return timeoutError(operation, 'deadline');
    case 'timeout':
      return timeoutError(operation, now() >= ctx.deadline.getTime() ? 'deadline' : 'request-timeout');
    case 'trust':
      // A certificate that is not trusted will not become trusted by trying again.
      return transportError(err.code, operation, "the provider's TLS certificate is not trusted", false);
    case 'connect':
      return transportError(err.code, operation, 'the provider is not reachable');
    case 'transport':
      return transportError(err.code, operation, 'the connection to the provider failed');
  }
}

/** Refuses to start a try once the call is aborted or past its deadline. */
export function checkCall(ctx: CallContext, operation: string, now: () => number): void {
  if (ctx.signal.aborted) throw timeoutError(operation, 'aborted');
  if (now() >= ctx.deadline.getTime()) throw timeoutError(operation, 'deadline');
}

/** `a=1&b=x%20y`: encodeURIComponent everywhere (no `+` for spaces), booleans as 1/0 as Proxmox requires. */
export function encodeParams(params: ProxmoxParams | undefined): string {
  if (!params) return '';
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    const text = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
    parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(text)}`);
  }
  return parts.join('&');
}

/** Fills `{name}` placeholders with URL-encoded values; the template stays the operation's name. */
export function apiPath(template: string, values: Record<string, string | number> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`missing path value ${name} for ${template}`);
    return encodeURIComponent(String(v));
  });
}

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

export interface ProxmoxHttpOptions {
  endpoint: URL;
  tls: ProxmoxTls;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  maxBodyBytes: number;
  now: () => number;
  /** The client's counters; every exchange and upgrade counts as a request. */
  stats: { requests: number };
}

export class ProxmoxHttp {
  /** Carries the TLS trust (proxmox-tls.ts) for exchanges and websocket upgrades alike. */
  readonly agent: https.Agent;

  constructor(readonly options: ProxmoxHttpOptions) {
    this.agent = createProxmoxAgent({ tls: options.tls, connectTimeoutMs: options.connectTimeoutMs });
  }

  /** `<endpoint path>/api2/json<path>`. */
  apiUrlPath(path: string): string {
    return `${this.options.endpoint.pathname.replace(/\/$/, '')}/api2/json${path}`;
  }

  close(): void {
    this.agent.destroy();
  }

  /** One HTTP exchange. Throws TryFailure for anything that is not an HTTP answer. */
  exchange(
    method: ProxmoxMethod,
    path: string,
    params: ProxmoxParams | undefined,
    authHeaders: Record<string, string>,
    ctx: CallContext,
    timeoutMs?: number,
  ): Promise<RawAnswer> {
    this.options.stats.requests++;
    const encoded = encodeParams(params);
    const withBody = method === 'POST' || method === 'PUT';
    const base = this.options.endpoint;
    const fullPath = `${this.apiUrlPath(path)}${!withBody && encoded ? `?${encoded}` : ''}`;
    const body = withBody ? Buffer.from(encoded, 'utf8') : undefined;
    const headers: Record<string, string | number> = {
      Accept: 'application/json',
      ...authHeaders,
      ...traceHeader(ctx),
    };
    if (body) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      headers['Content-Length'] = body.length;
    }
    const requestTimeoutMs = this.options.requestTimeoutMs;
    return new Promise<RawAnswer>((resolve, reject) => {
      const { finish, fail, watchAbort } = settleOnce(
        ctx,
        this.options.now,
        Math.min(timeoutMs ?? requestTimeoutMs, requestTimeoutMs),
        () => req.destroy(),
        reject,
      );
      const req = https.request(
        {
          protocol: 'https:',
          hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'),
          port: Number(base.port) || 443,
          method,
          path: fullPath,
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > this.options.maxBodyBytes) {
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
            finish(() => settleAnswer(res.statusCode ?? 0, res.statusMessage ?? '', chunks, resolve, reject)),
          );
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => fail(connectionFailure(err)));
      if (watchAbort()) req.end(body);
    });
  }
}

/** A 2xx answer must be the JSON envelope; an error answer may be anything (old servers send no body). */
function settleAnswer(
  status: number,
  reason: string,
  chunks: Buffer[],
  resolve: (answer: RawAnswer) => void,
  reject: (error: Error) => void,
): void {
  const text = Buffer.concat(chunks).toString('utf8');
  let parsed: unknown;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (status >= 200 && status < 300 && (parsed === undefined || typeof parsed !== 'object' || parsed === null)) {
    reject(new TryFailure('transport', 'BAD_ANSWER', 'answer is not the JSON envelope'));
    return;
  }
  resolve({ status, reason, body: parsed });
}
