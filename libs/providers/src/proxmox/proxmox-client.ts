/**
 * HTTP client of the Proxmox VE API (`/api2/json`).
 *
 * - Auth: an API token header (`Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET`), or a ticket
 *   (`POST /access/ticket` → cookie `PVEAuthCookie` plus `CSRFPreventionToken` on every write). Tickets
 *   live two hours; this client renews them after `ticketRenewAfterMs` (by posting the current ticket
 *   as the password, as Proxmox allows) and logs in again on a 401.
 * - TLS: see proxmox-tls.ts (CA or pinned fingerprint; never unverified).
 * - Every call has a timeout bounded by the caller's deadline and stops when its abort signal fires.
 * - Retries: connection failures that happened before anything was sent, for every method; other
 *   transient failures (5xx, resets, timeouts of one try) only for GETs and writes the caller marks
 *   `idempotent`.
 * - Answers: the `{data: ...}` envelope is unwrapped; error answers become ProxmoxApiError (see
 *   proxmox-errors.ts), with secrets scrubbed from whatever the error carries.
 * - Websockets (consoles): the upgrade goes through the same agent (TLS trust) with the same auth
 *   headers, so a console is opened as the identity that asked for its ticket.
 */
import type http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocket } from 'ws';
import { HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCredentials, ProxmoxTls } from './proxmox-config';
import { ProxmoxApiError, apiError, redactError, timeoutError, transportError } from './proxmox-errors';
import { TlsTrustError, createProxmoxAgent, isTlsTrustFailure } from './proxmox-tls';

export type ProxmoxMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type ProxmoxParams = Record<string, string | number | boolean | undefined | null>;

export interface ProxmoxClientOptions {
  /** `https://host:port` (see parseProxmoxEndpoint). */
  endpoint: URL;
  credentials: ProxmoxCredentials;
  tls: ProxmoxTls;
  /** Upper bound of one HTTP exchange; the call's deadline may cut it shorter. Default 30 s. */
  requestTimeoutMs?: number;
  /** TCP + TLS handshake. Default 10 s. */
  connectTimeoutMs?: number;
  /** Tries of a retryable call, including the first. Default 3. */
  maxAttempts?: number;
  /** First retry delay; doubles each time (with jitter). Default 200 ms. */
  retryBaseMs?: number;
  /** Renew the ticket once it is this old. Default 90 min (tickets last 2 h). */
  ticketRenewAfterMs?: number;
  /** A ticket older than this is not used at all; log in afresh. Default 115 min. */
  ticketMaxAgeMs?: number;
  /** Largest answer body accepted. Default 32 MiB. */
  maxBodyBytes?: number;
  now?: () => number;
  random?: () => number;
}

export interface ProxmoxRequestOptions {
  params?: ProxmoxParams;
  /** Safe to send again when the outcome of a try is unknown. GETs always are. */
  idempotent?: boolean;
  /** Shorter timeout for this call than the client's default. */
  timeoutMs?: number;
}

interface Ticket {
  ticket: string;
  csrf: string;
  username: string;
  obtainedAt: number;
}

interface RawAnswer {
  status: number;
  reason: string;
  body: unknown;
}

/** Thrown inside one try; the retry loop decides what it becomes. */
class TryFailure extends Error {
  constructor(
    readonly kind: 'connect' | 'transport' | 'timeout' | 'aborted' | 'deadline' | 'trust',
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// Failures while connecting: nothing has been sent, so any request may be tried again.
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/** What a socket error says about an exchange: the certificate is not trusted, the connect failed, or the connection broke. */
function connectionFailure(err: NodeJS.ErrnoException): TryFailure {
  const code = err instanceof TlsTrustError ? err.code : (err.code ?? 'ECONNRESET');
  if (err instanceof TlsTrustError || isTlsTrustFailure(code)) return new TryFailure('trust', code, 'untrusted certificate');
  if (CONNECT_CODES.has(code)) return new TryFailure('connect', code, 'connect failed');
  if (code === 'ETIMEDOUT') return new TryFailure('connect', code, 'connect timed out');
  return new TryFailure('transport', code, 'connection failed');
}
// Statuses worth a second try of an idempotent call: gateway trouble and pveproxy's pseudo statuses.
const RETRY_STATUSES = new Set([502, 503, 504, 595, 596, 597, 599]);
const RETRY_500_MESSAGES = [/got no worker upid/i, /try again/i];

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

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

export class ProxmoxClient {
  private readonly agent: https.Agent;
  private readonly requestTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly renewAfterMs: number;
  private readonly maxAgeMs: number;
  private readonly maxBodyBytes: number;
  private readonly now: () => number;
  private readonly random: () => number;
  private ticket: Ticket | undefined;
  private login: Promise<Ticket> | undefined;
  /** Recent tickets and CSRF tokens, scrubbed from errors like the credentials. */
  private readonly pastTickets: string[] = [];
  /** Counters for tests and metrics. */
  readonly stats = { requests: 0, retries: 0, logins: 0, renewals: 0 };

  constructor(private readonly options: ProxmoxClientOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 3);
    this.retryBaseMs = options.retryBaseMs ?? 200;
    this.renewAfterMs = options.ticketRenewAfterMs ?? 90 * 60_000;
    this.maxAgeMs = options.ticketMaxAgeMs ?? 115 * 60_000;
    this.maxBodyBytes = options.maxBodyBytes ?? 32 * 1024 * 1024;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.agent = createProxmoxAgent({ tls: options.tls, connectTimeoutMs: options.connectTimeoutMs ?? 10_000 });
  }

  get<T>(template: string, values: Record<string, string | number>, ctx: CallContext, params?: ProxmoxParams): Promise<T> {
    return this.request<T>('GET', template, values, ctx, { params, idempotent: true });
  }

  post<T>(template: string, values: Record<string, string | number>, ctx: CallContext, options: ProxmoxRequestOptions = {}): Promise<T> {
    return this.request<T>('POST', template, values, ctx, options);
  }

  put<T>(template: string, values: Record<string, string | number>, ctx: CallContext, options: ProxmoxRequestOptions = {}): Promise<T> {
    return this.request<T>('PUT', template, values, ctx, options);
  }

  delete<T>(template: string, values: Record<string, string | number>, ctx: CallContext, options: ProxmoxRequestOptions = {}): Promise<T> {
    return this.request<T>('DELETE', template, values, ctx, options);
  }

  /**
   * One API call. `template` is the schema path (`/nodes/{node}/qemu/{vmid}/config`); it names the
   * operation in errors, so errors never carry the node, the VMID or a parameter value.
   */
  async request<T>(
    method: ProxmoxMethod,
    template: string,
    values: Record<string, string | number>,
    ctx: CallContext,
    options: ProxmoxRequestOptions = {},
  ): Promise<T> {
    const operation = `${method} ${template}`;
    try {
      return (await this.withRetries(method, apiPath(template, values), operation, ctx, options)) as T;
    } catch (err) {
      throw this.scrub(err);
    }
  }

  /**
   * Opens a websocket to `template` (with `params` as query) within the call's deadline, as the same
   * identity and over the same TLS trust as every other call. `secrets` (a console ticket in the
   * query, say) are scrubbed from errors like the credentials. Not retried: what the URL carries is
   * usually single-use. Answers the connection as a byte stream, attached from the start: a server that
   * speaks first (an RFB server does) may send its first frame in the same packet as the upgrade.
   */
  async openWebSocket(
    template: string,
    values: Record<string, string | number>,
    params: ProxmoxParams,
    ctx: CallContext,
    options: { secrets?: string[] } = {},
  ): Promise<Duplex> {
    const operation = `GET ${template} (websocket)`;
    try {
      this.checkCall(ctx, operation);
      const auth = await this.authHeaders('GET', ctx);
      return await this.upgrade(apiPath(template, values), params, auth.headers, ctx, operation);
    } catch (err) {
      throw this.scrub(err instanceof TryFailure ? this.failureToError(err, operation, ctx) : err, options.secrets);
    }
  }

  /** Drops the ticket, so the next call logs in again (used by tests and after credential changes). */
  forgetTicket(): void {
    this.ticket = undefined;
  }

  close(): void {
    this.agent.destroy();
  }

  private async withRetries(
    method: ProxmoxMethod,
    path: string,
    operation: string,
    ctx: CallContext,
    options: ProxmoxRequestOptions,
  ): Promise<unknown> {
    const idempotent = method === 'GET' || options.idempotent === true;
    let reloggedIn = false;
    for (let attempt = 1; ; attempt++) {
      this.checkCall(ctx, operation);
      let answer: RawAnswer;
      let usedTicket: Ticket | undefined;
      try {
        const auth = await this.authHeaders(method, ctx);
        usedTicket = auth.ticket;
        answer = await this.exchange(method, path, options.params, auth.headers, ctx, operation, options.timeoutMs);
      } catch (err) {
        if (!(err instanceof TryFailure)) throw err;
        const error = this.failureToError(err, operation, ctx);
        const safe = err.kind === 'connect' || (idempotent && (err.kind === 'transport' || err.kind === 'timeout'));
        if (safe && attempt < this.maxAttempts && (await this.backoff(attempt, ctx))) continue;
        throw error;
      }
      if (answer.status >= 200 && answer.status < 300) {
        const body = answer.body as { data?: unknown } | undefined;
        return body && typeof body === 'object' && 'data' in body ? body.data : null;
      }
      // A refused ticket: log in again once and repeat (a 401 means nothing was done).
      if (answer.status === 401 && usedTicket && !reloggedIn) {
        reloggedIn = true;
        if (this.ticket === usedTicket) this.ticket = undefined;
        attempt--;
        continue;
      }
      const error = apiError(answer.status, answer.reason, answer.body, operation);
      const transient =
        RETRY_STATUSES.has(answer.status) || (answer.status === 500 && RETRY_500_MESSAGES.some((p) => p.test(error.providerMessage)));
      if (idempotent && transient && attempt < this.maxAttempts && (await this.backoff(attempt, ctx))) continue;
      throw error;
    }
  }

  /** Waits before the next try; false when the deadline would pass first. */
  private async backoff(attempt: number, ctx: CallContext): Promise<boolean> {
    const delay = this.retryBaseMs * 2 ** (attempt - 1) * (0.75 + this.random() * 0.5);
    if (this.now() + delay >= ctx.deadline.getTime()) return false;
    this.stats.retries++;
    await sleep(delay, ctx.signal);
    return !ctx.signal.aborted;
  }

  private checkCall(ctx: CallContext, operation: string): void {
    if (ctx.signal.aborted) throw timeoutError(operation, 'aborted');
    if (this.now() >= ctx.deadline.getTime()) throw timeoutError(operation, 'deadline');
  }

  private failureToError(err: TryFailure, operation: string, ctx: CallContext): HcpError {
    switch (err.kind) {
      case 'aborted':
        return timeoutError(operation, 'aborted');
      case 'deadline':
        return timeoutError(operation, 'deadline');
      case 'timeout':
        return timeoutError(operation, this.now() >= ctx.deadline.getTime() ? 'deadline' : 'request-timeout');
      case 'trust':
        // A certificate that is not trusted will not become trusted by trying again.
        return transportError(err.code, operation, "the provider's TLS certificate is not trusted", false);
      case 'connect':
        return transportError(err.code, operation, 'the provider is not reachable');
      case 'transport':
        return transportError(err.code, operation, 'the connection to the provider failed');
    }
  }

  private async authHeaders(method: ProxmoxMethod, ctx: CallContext): Promise<{ headers: Record<string, string>; ticket?: Ticket }> {
    const creds = this.options.credentials;
    if (creds.kind === 'token') {
      return { headers: { Authorization: `PVEAPIToken=${creds.tokenId}=${creds.secret}` } };
    }
    const ticket = await this.currentTicket(ctx);
    const headers: Record<string, string> = { Cookie: `PVEAuthCookie=${encodeURIComponent(ticket.ticket)}` };
    if (method !== 'GET') headers.CSRFPreventionToken = ticket.csrf;
    return { headers, ticket };
  }

  /** The ticket to use now: the current one, a renewed one, or a fresh login. One login at a time. */
  private async currentTicket(ctx: CallContext): Promise<Ticket> {
    const age = this.ticket ? this.now() - this.ticket.obtainedAt : Infinity;
    if (this.ticket && age < this.renewAfterMs) return this.ticket;
    if (!this.login) {
      const previous = this.ticket && age < this.maxAgeMs ? this.ticket : undefined;
      this.login = this.obtainTicket(previous, ctx).finally(() => {
        this.login = undefined;
      });
    }
    return this.login;
  }

  private async obtainTicket(previous: Ticket | undefined, ctx: CallContext): Promise<Ticket> {
    const creds = this.options.credentials;
    if (creds.kind !== 'password') throw new Error('ticket auth needs a username and password');
    if (previous) {
      try {
        const renewed = await this.postTicket(previous.username, previous.ticket, ctx);
        this.stats.renewals++;
        return (this.ticket = this.rememberTicket(renewed));
      } catch (err) {
        // A renewal the server refuses (expired, key rotated) falls back to the password.
        if (!(err instanceof ProxmoxApiError && (err.status === 401 || err.status === 403))) throw err;
      }
    }
    const fresh = await this.postTicket(creds.username, creds.password, ctx);
    this.stats.logins++;
    return (this.ticket = this.rememberTicket(fresh));
  }

  private async postTicket(username: string, password: string, ctx: CallContext): Promise<Ticket> {
    const operation = 'POST /access/ticket';
    const obtainedAt = this.now();
    let answer: RawAnswer | undefined;
    for (let attempt = 1; ; attempt++) {
      this.checkCall(ctx, operation);
      try {
        answer = await this.exchange('POST', '/access/ticket', { username, password }, {}, ctx, operation);
      } catch (err) {
        if (!(err instanceof TryFailure)) throw err;
        const error = this.failureToError(err, operation, ctx);
        // Logging in changes nothing on the server: safe to try again.
        if ((err.kind === 'connect' || err.kind === 'transport' || err.kind === 'timeout') && attempt < this.maxAttempts && (await this.backoff(attempt, ctx))) continue;
        throw error;
      }
      if (answer.status >= 200 && answer.status < 300) break;
      const error = apiError(answer.status, answer.reason, answer.body, operation);
      if (RETRY_STATUSES.has(answer.status) && attempt < this.maxAttempts && (await this.backoff(attempt, ctx))) continue;
      throw error;
    }
    const data = (answer.body as { data?: Record<string, unknown> } | undefined)?.data ?? {};
    if (data.NeedTFA) {
      throw new HcpError('PROVIDER_UNAVAILABLE', 'the provider account needs two-factor authentication; use an API token', undefined, false);
    }
    if (typeof data.ticket !== 'string' || typeof data.CSRFPreventionToken !== 'string') {
      throw transportError('BAD_ANSWER', operation, 'the provider answered the login without a ticket', true);
    }
    return {
      ticket: data.ticket,
      csrf: data.CSRFPreventionToken,
      username: typeof data.username === 'string' ? data.username : username,
      obtainedAt,
    };
  }

  /** One HTTP exchange. Throws TryFailure for anything that is not an HTTP answer. */
  private exchange(
    method: ProxmoxMethod,
    path: string,
    params: ProxmoxParams | undefined,
    authHeaders: Record<string, string>,
    ctx: CallContext,
    operation: string,
    timeoutMs?: number,
  ): Promise<RawAnswer> {
    this.stats.requests++;
    const encoded = encodeParams(params);
    const withBody = method === 'POST' || method === 'PUT';
    const base = this.options.endpoint;
    const fullPath = `${base.pathname.replace(/\/$/, '')}/api2/json${path}${!withBody && encoded ? `?${encoded}` : ''}`;
    const body = withBody ? Buffer.from(encoded, 'utf8') : undefined;
    const headers: Record<string, string | number> = { Accept: 'application/json', ...authHeaders };
    // The HCP request behind this call, for whoever reads the provider's (or its proxy's) access log.
    if (ctx.trace_id && /^[\x21-\x7e]{1,128}$/.test(ctx.trace_id)) headers['X-Request-Id'] = ctx.trace_id;
    if (body) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      headers['Content-Length'] = body.length;
    }
    return new Promise<RawAnswer>((resolve, reject) => {
      const { finish, fail, watchAbort } = this.settleOnce(ctx, Math.min(timeoutMs ?? this.requestTimeoutMs, this.requestTimeoutMs), () => req.destroy(), reject);
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
            if (size > this.maxBodyBytes) {
              fail(new TryFailure('transport', 'BODY_TOO_LARGE', 'answer too large'));
              return;
            }
            chunks.push(chunk);
          });
          res.on('aborted', () => fail(new TryFailure('transport', 'ECONNRESET', 'answer cut off')));
          res.on('close', () => {
            if (!res.complete) fail(new TryFailure('transport', 'ECONNRESET', 'answer cut off'));
          });
          res.on('error', (err: NodeJS.ErrnoException) => fail(new TryFailure('transport', err.code ?? 'ECONNRESET', 'answer cut off')));
          res.on('end', () =>
            finish(() => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown = undefined;
              if (text !== '') {
                try {
                  parsed = JSON.parse(text);
                } catch {
                  parsed = undefined;
                }
              }
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300 && (parsed === undefined || typeof parsed !== 'object' || parsed === null)) {
                reject(new TryFailure('transport', 'BAD_ANSWER', 'answer is not the JSON envelope'));
                return;
              }
              resolve({ status, reason: res.statusMessage ?? '', body: parsed });
            }),
          );
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => fail(connectionFailure(err)));
      if (watchAbort()) req.end(body);
    });
  }

  private upgrade(path: string, params: ProxmoxParams, authHeaders: Record<string, string>, ctx: CallContext, operation: string): Promise<Duplex> {
    this.stats.requests++;
    const base = this.options.endpoint;
    const url = `wss://${base.host}${base.pathname.replace(/\/$/, '')}/api2/json${path}?${encodeParams(params)}`;
    const headers: Record<string, string> = { ...authHeaders };
    if (ctx.trace_id && /^[\x21-\x7e]{1,128}$/.test(ctx.trace_id)) headers['X-Request-Id'] = ctx.trace_id;

    return new Promise<Duplex>((resolve, reject) => {
      const ws = new WebSocket(url, { agent: this.agent, headers, perMessageDeflate: false, followRedirects: false });
      // Created before the upgrade completes, so no message can arrive before someone listens.
      const stream = createWebSocketStream(ws);
      // Until the caller takes the stream, its errors are this promise's (see the ws listener below).
      stream.on('error', () => undefined);
      const { finish, fail, watchAbort } = this.settleOnce(ctx, this.requestTimeoutMs, () => ws.terminate(), reject);
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

  /**
   * The one outcome of an exchange: whichever comes first of its answer (`finish`), its time limit (the
   * request timeout, or the call's deadline when that is sooner) and the call's abort signal settles it;
   * a failure tears the attempt down with `cancel` first. `watchAbort` starts listening for the abort
   * once the attempt exists, and says whether the call is still on.
   */
  private settleOnce(ctx: CallContext, requestTimeoutMs: number, cancel: () => void, reject: (error: Error) => void) {
    const remaining = ctx.deadline.getTime() - this.now();
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

  private secrets(): string[] {
    const creds = this.options.credentials;
    const list = creds.kind === 'token' ? [creds.secret, `${creds.tokenId}=${creds.secret}`] : [creds.password];
    return [...list, ...this.pastTickets];
  }

  private rememberTicket(ticket: Ticket): Ticket {
    this.pastTickets.push(ticket.ticket, ticket.csrf);
    if (this.pastTickets.length > 8) this.pastTickets.splice(0, this.pastTickets.length - 8);
    return ticket;
  }

  private scrub(err: unknown, extra: readonly string[] = []): unknown {
    return err instanceof HcpError ? redactError(err, [...this.secrets(), ...extra]) : err;
  }
}
