/**
 * Client of the Proxmox VE API (`/api2/json`): what the driver calls. It puts together
 *
 * - Auth (proxmox-auth.ts): an API token header, or a ticket that is renewed before it expires and
 *   obtained again on a 401.
 * - TLS: see common/https/trusting-agent.ts (CA or pinned fingerprint; never unverified).
 * - Exchanges (proxmox-http.ts): every call has a timeout bounded by the caller's deadline and stops
 *   when its abort signal fires.
 * - Retries (here; backoff in common/retry.ts, transient answers in proxmox-retry.ts): connection
 *   failures that happened before anything was sent, for every method; other transient failures
 *   (5xx, resets, timeouts of one try) only for GETs and writes the caller marks `idempotent`.
 * - Answers: the `{data: ...}` envelope is unwrapped; error answers become ProxmoxApiError (see
 *   proxmox-errors.ts), with secrets scrubbed from whatever the error carries.
 * - Websockets (consoles, proxmox-websocket.ts): the upgrade goes through the same agent (TLS trust)
 *   with the same auth headers, so a console is opened as the identity that asked for its ticket.
 */
import type { Duplex } from 'node:stream';
import { HcpError } from '@hcp/domain';
import { checkCall } from '../common/call-errors';
import type { TlsTrust } from '../common/https/tls-trust';
import { TryFailure, failureToError } from '../common/https/try-failure';
import { RetryBackoff } from '../common/retry';
import type { CallContext } from '../spi/provider-driver';
import { ProxmoxAuth, type Ticket } from './proxmox-auth';
import type { ProxmoxCredentials } from './proxmox-config';
import { apiError, redactError, transportError } from './proxmox-errors';
import { ProxmoxHttp, apiPath, type ProxmoxMethod, type ProxmoxParams, type RawAnswer } from './proxmox-http';
import { isTransientAnswer } from './proxmox-retry';
import { upgradeToWebSocket } from './proxmox-websocket';

export interface ProxmoxClientOptions {
  /** `https://host:port` (see parseProxmoxEndpoint). */
  endpoint: URL;
  credentials: ProxmoxCredentials;
  tls: TlsTrust;
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

export class ProxmoxClient {
  private readonly http: ProxmoxHttp;
  private readonly retry: RetryBackoff;
  private readonly auth: ProxmoxAuth;
  private readonly now: () => number;
  /** Counters for tests and metrics. */
  readonly stats = { requests: 0, retries: 0, logins: 0, renewals: 0 };

  constructor(options: ProxmoxClientOptions) {
    this.now = options.now ?? Date.now;
    const now = this.now;
    const stats = this.stats;
    this.http = new ProxmoxHttp({
      endpoint: options.endpoint,
      tls: options.tls,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
      now,
      stats,
    });
    this.retry = new RetryBackoff({
      maxAttempts: Math.max(1, options.maxAttempts ?? 3),
      retryBaseMs: options.retryBaseMs ?? 200,
      now,
      random: options.random ?? Math.random,
      stats,
    });
    this.auth = new ProxmoxAuth({
      credentials: options.credentials,
      renewAfterMs: options.ticketRenewAfterMs ?? 90 * 60_000,
      maxAgeMs: options.ticketMaxAgeMs ?? 115 * 60_000,
      now,
      http: this.http,
      retry: this.retry,
      stats,
    });
  }

  get<T>(
    template: string,
    values: Record<string, string | number>,
    ctx: CallContext,
    params?: ProxmoxParams,
  ): Promise<T> {
    return this.request<T>('GET', template, values, ctx, { params, idempotent: true });
  }

  post<T>(
    template: string,
    values: Record<string, string | number>,
    ctx: CallContext,
    options: ProxmoxRequestOptions = {},
  ): Promise<T> {
    return this.request<T>('POST', template, values, ctx, options);
  }

  put<T>(
    template: string,
    values: Record<string, string | number>,
    ctx: CallContext,
    options: ProxmoxRequestOptions = {},
  ): Promise<T> {
    return this.request<T>('PUT', template, values, ctx, options);
  }

  delete<T>(
    template: string,
    values: Record<string, string | number>,
    ctx: CallContext,
    options: ProxmoxRequestOptions = {},
  ): Promise<T> {
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
      checkCall(ctx, operation, this.now);
      const auth = await this.auth.headers('GET', ctx);
      return await upgradeToWebSocket(this.http, apiPath(template, values), params, auth.headers, ctx, operation);
    } catch (err) {
      throw this.scrub(
        err instanceof TryFailure ? failureToError(err, operation, ctx, this.now, transportError) : err,
        options.secrets,
      );
    }
  }

  /** Drops the ticket, so the next call logs in again (used by tests and after credential changes). */
  forgetTicket(): void {
    this.auth.forget();
  }

  close(): void {
    this.http.close();
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
      checkCall(ctx, operation, this.now);
      let answer: RawAnswer;
      let usedTicket: Ticket | undefined;
      try {
        const auth = await this.auth.headers(method, ctx);
        usedTicket = auth.ticket;
        answer = await this.http.exchange(method, path, options.params, auth.headers, ctx, options.timeoutMs);
      } catch (err) {
        if (!(err instanceof TryFailure)) throw err;
        const error = failureToError(err, operation, ctx, this.now, transportError);
        const safe = err.kind === 'connect' || (idempotent && (err.kind === 'transport' || err.kind === 'timeout'));
        if (safe && (await this.retry.tryAgain(attempt, ctx))) continue;
        throw error;
      }
      if (answer.status >= 200 && answer.status < 300) {
        const body = answer.body as { data?: unknown } | undefined;
        return body && typeof body === 'object' && 'data' in body ? body.data : null;
      }
      // A refused ticket: log in again once and repeat (a 401 means nothing was done).
      if (answer.status === 401 && usedTicket && !reloggedIn) {
        reloggedIn = true;
        this.auth.refused(usedTicket);
        attempt--;
        continue;
      }
      const error = apiError(answer.status, answer.reason, answer.body, operation);
      if (
        idempotent &&
        isTransientAnswer(answer.status, error.providerMessage) &&
        (await this.retry.tryAgain(attempt, ctx))
      )
        continue;
      throw error;
    }
  }

  private scrub(err: unknown, extra: readonly string[] = []): unknown {
    return err instanceof HcpError ? redactError(err, [...this.auth.secrets(), ...extra]) : err;
  }
}
