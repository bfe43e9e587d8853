/**
 * One HTTP exchange with the Proxmox VE API (`/api2/json`), with no retries and no auth of its own:
 * the caller brings the auth headers (proxmox-auth.ts) and decides what a failure is worth
 * (proxmox-client.ts). The exchange itself is common/https/exchange.ts; what is Proxmox's is here:
 * parameters form-encoded (query or body) and a 2xx answer that must be the JSON envelope. Whatever
 * is not an HTTP answer comes out as a TryFailure, so the one place that turns failures into taxonomy
 * errors (failureToError) sees every kind.
 */
import type https from 'node:https';
import { type HttpsClientOptions, httpsExchange, traceHeader } from '../common/https/exchange';
import { createTrustingAgent } from '../common/https/trusting-agent';
import { TryFailure } from '../common/https/try-failure';
import type { CallContext } from '../spi/provider-driver';

export type ProxmoxMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type ProxmoxParams = Record<string, string | number | boolean | undefined | null>;

export interface RawAnswer {
  status: number;
  reason: string;
  body: unknown;
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

export class ProxmoxHttp {
  /** Carries the TLS trust (common/https/trusting-agent.ts) for exchanges and websocket upgrades alike. */
  readonly agent: https.Agent;

  constructor(readonly options: HttpsClientOptions) {
    this.agent = createTrustingAgent({ tls: options.tls, connectTimeoutMs: options.connectTimeoutMs });
  }

  /** `<endpoint path>/api2/json<path>`. */
  apiUrlPath(path: string): string {
    return `${this.options.endpoint.pathname.replace(/\/$/, '')}/api2/json${path}`;
  }

  close(): void {
    this.agent.destroy();
  }

  /** One HTTP exchange. Throws TryFailure for anything that is not an HTTP answer. */
  async exchange(
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
    const answer = await httpsExchange(
      {
        agent: this.agent,
        endpoint: this.options.endpoint,
        method,
        path: `${this.apiUrlPath(path)}${!withBody && encoded ? `?${encoded}` : ''}`,
        headers,
        body,
        maxBodyBytes: this.options.maxBodyBytes,
        requestTimeoutMs: Math.min(timeoutMs ?? requestTimeoutMs, requestTimeoutMs),
        now: this.options.now,
      },
      ctx,
    );
    return jsonAnswer(answer.status, answer.reason, answer.body.toString('utf8'));
  }
}

/** A 2xx answer must be the JSON envelope; an error answer may be anything (old servers send no body). */
function jsonAnswer(status: number, reason: string, text: string): RawAnswer {
  let parsed: unknown;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (status >= 200 && status < 300 && (parsed === undefined || typeof parsed !== 'object' || parsed === null)) {
    throw new TryFailure('transport', 'BAD_ANSWER', 'answer is not the JSON envelope');
  }
  return { status, reason, body: parsed };
}
