/**
 * Who the client is to Proxmox: an API token header (`Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET`),
 * or a ticket (`POST /access/ticket` → cookie `PVEAuthCookie` plus `CSRFPreventionToken` on every
 * write). Tickets live two hours; they are renewed after `renewAfterMs` (by posting the current ticket
 * as the password, as Proxmox allows), and a ticket the server refuses is dropped so the next call
 * logs in again.
 */
import { HcpError } from '@hcp/domain';
import { checkCall } from '../common/call-errors';
import { TryFailure, failureToError } from '../common/https/try-failure';
import type { RetryBackoff } from '../common/retry';
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCredentials } from './proxmox-config';
import { ProxmoxApiError, apiError, transportError } from './proxmox-errors';
import type { ProxmoxHttp, ProxmoxMethod, RawAnswer } from './proxmox-http';
import { RETRY_STATUSES } from './proxmox-retry';

export interface Ticket {
  ticket: string;
  csrf: string;
  username: string;
  obtainedAt: number;
}

export interface ProxmoxAuthOptions {
  credentials: ProxmoxCredentials;
  /** Renew the ticket once it is this old. */
  renewAfterMs: number;
  /** A ticket older than this is not used at all; log in afresh. */
  maxAgeMs: number;
  now: () => number;
  http: ProxmoxHttp;
  retry: RetryBackoff;
  stats: { logins: number; renewals: number };
}

export class ProxmoxAuth {
  private ticket: Ticket | undefined;
  private login: Promise<Ticket> | undefined;
  /** Recent tickets and CSRF tokens, scrubbed from errors like the credentials. */
  private readonly pastTickets: string[] = [];

  constructor(private readonly options: ProxmoxAuthOptions) {}

  /** The headers of a call; `ticket` is the ticket they carry, to hand back to `refused` on a 401. */
  async headers(
    method: ProxmoxMethod,
    ctx: CallContext,
  ): Promise<{ headers: Record<string, string>; ticket?: Ticket }> {
    const creds = this.options.credentials;
    if (creds.kind === 'token') {
      return { headers: { Authorization: `PVEAPIToken=${creds.tokenId}=${creds.secret}` } };
    }
    const ticket = await this.currentTicket(ctx);
    const headers: Record<string, string> = { Cookie: `PVEAuthCookie=${encodeURIComponent(ticket.ticket)}` };
    if (method !== 'GET') headers.CSRFPreventionToken = ticket.csrf;
    return { headers, ticket };
  }

  /** The server refused this ticket: unless another call already replaced it, the next call logs in. */
  refused(ticket: Ticket): void {
    if (this.ticket === ticket) this.ticket = undefined;
  }

  forget(): void {
    this.ticket = undefined;
  }

  /** Everything that must never leave the client in an error. */
  secrets(): string[] {
    const creds = this.options.credentials;
    const list = creds.kind === 'token' ? [creds.secret, `${creds.tokenId}=${creds.secret}`] : [creds.password];
    return [...list, ...this.pastTickets];
  }

  /** The ticket to use now: the current one, a renewed one, or a fresh login. One login at a time. */
  private async currentTicket(ctx: CallContext): Promise<Ticket> {
    const age = this.ticket ? this.options.now() - this.ticket.obtainedAt : Infinity;
    if (this.ticket && age < this.options.renewAfterMs) return this.ticket;
    if (!this.login) {
      const previous = this.ticket && age < this.options.maxAgeMs ? this.ticket : undefined;
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
        this.options.stats.renewals++;
        this.ticket = this.rememberTicket(renewed);
        return this.ticket;
      } catch (err) {
        // A renewal the server refuses (expired, key rotated) falls back to the password.
        if (!(err instanceof ProxmoxApiError && (err.status === 401 || err.status === 403))) throw err;
      }
    }
    const fresh = await this.postTicket(creds.username, creds.password, ctx);
    this.options.stats.logins++;
    this.ticket = this.rememberTicket(fresh);
    return this.ticket;
  }

  private async postTicket(username: string, password: string, ctx: CallContext): Promise<Ticket> {
    const operation = 'POST /access/ticket';
    const { now, http, retry } = this.options;
    const obtainedAt = now();
    let answer: RawAnswer | undefined;
    for (let attempt = 1; ; attempt++) {
      checkCall(ctx, operation, now);
      try {
        answer = await http.exchange('POST', '/access/ticket', { username, password }, {}, ctx);
      } catch (err) {
        if (!(err instanceof TryFailure)) throw err;
        const error = failureToError(err, operation, ctx, now, transportError);
        // Logging in changes nothing on the server: safe to try again.
        if (
          (err.kind === 'connect' || err.kind === 'transport' || err.kind === 'timeout') &&
          (await retry.tryAgain(attempt, ctx))
        )
          continue;
        throw error;
      }
      if (answer.status >= 200 && answer.status < 300) break;
      const error = apiError(answer.status, answer.reason, answer.body, operation);
      if (RETRY_STATUSES.has(answer.status) && (await retry.tryAgain(attempt, ctx))) continue;
      throw error;
    }
    return ticketOfAnswer(answer.body, username, obtainedAt, operation);
  }

  private rememberTicket(ticket: Ticket): Ticket {
    this.pastTickets.push(ticket.ticket, ticket.csrf);
    if (this.pastTickets.length > 8) this.pastTickets.splice(0, this.pastTickets.length - 8);
    return ticket;
  }
}

function ticketOfAnswer(body: unknown, username: string, obtainedAt: number, operation: string): Ticket {
  const data = (body as { data?: Record<string, unknown> } | undefined)?.data ?? {};
  if (data.NeedTFA) {
    throw new HcpError(
      'PROVIDER_UNAVAILABLE',
      'the provider account needs two-factor authentication; use an API token',
      undefined,
      false,
    );
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
