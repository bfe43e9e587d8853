import * as http from 'node:http';
import * as https from 'node:https';
import {
  type ClaimedHostCall,
  type ClaimRequest,
  type EnrollRequest,
  type EnrollResponse,
  type Heartbeat,
  type HostCallOutcome,
  INTERNAL_ROUTES,
} from '@hcp/host-protocol';

/** HCP could not be reached at all (no answer): connection refused, DNS, timeout, TLS. */
export class HcpUnreachableError extends Error {
  constructor(
    readonly url: string,
    /** The socket's error code (ECONNREFUSED, ENOTFOUND, CERT_HAS_EXPIRED, ...), when it has one. */
    readonly code: string | undefined,
    readonly reason: string,
  ) {
    super(`HCP at ${url} is unreachable: ${code ? `${code} ` : ''}${reason}`);
    this.name = 'HcpUnreachableError';
  }

  /** The TLS handshake failed (certificate not trusted, expired, wrong name, not TLS at all). */
  get isTls(): boolean {
    const code = this.code ?? '';
    return TLS_CODES.has(code) || code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT');
  }
}

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'EPROTO',
]);

/** HCP answered with an error status; `code` and `hcpMessage` come from its error envelope when it sent one. */
export class HcpStatusError extends Error {
  constructor(
    readonly url: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly hcpMessage: string | undefined,
  ) {
    super(`HCP answered ${status}${code ? ` ${code}` : ''} for ${url}${hcpMessage ? `: ${hcpMessage}` : ''}`);
    this.name = 'HcpStatusError';
  }

  /** Worth trying again later: HCP or something in front of it is overloaded or restarting. */
  get isTransient(): boolean {
    return this.status >= 500 || this.status === 429 || this.status === 408;
  }
}

/** Any transient failure to talk to HCP: the loops back off and try again. */
export const isTransient = (err: unknown): boolean =>
  err instanceof HcpUnreachableError || (err instanceof HcpStatusError && err.isTransient);

export interface HcpClientOptions {
  /** HCP's base URL (or its internal port's), e.g. https://hcp.example:8443 */
  baseUrl: string;
  /** The host credential; every route but enroll needs it. */
  credential?: string;
  /** PEM of the CA that signs HCP's certificate, when it is not a public one. */
  ca?: string | Buffer;
  /** How long a request may take (claims add their long-poll wait to it). */
  timeoutMs?: number;
}

/** The agent's side of the internal router (libs/host-protocol): one method per route. */
export class HcpClient {
  private readonly agent: http.Agent;
  private readonly base: URL;

  constructor(private readonly options: HcpClientOptions) {
    this.base = new URL(options.baseUrl);
    this.agent =
      this.base.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ...(options.ca ? { ca: options.ca } : {}) })
        : new http.Agent({ keepAlive: true });
  }

  withCredential(credential: string): HcpClient {
    return new HcpClient({ ...this.options, credential });
  }

  async enroll(body: EnrollRequest): Promise<EnrollResponse> {
    return (await this.post(INTERNAL_ROUTES.enroll, body, { auth: false })) as EnrollResponse;
  }

  async heartbeat(body: Heartbeat, signal?: AbortSignal): Promise<void> {
    await this.post(INTERNAL_ROUTES.heartbeat, body, { signal });
  }

  async claim(body: Required<ClaimRequest>, signal?: AbortSignal): Promise<ClaimedHostCall[]> {
    const answer = (await this.post(INTERNAL_ROUTES.claim, body, {
      signal,
      timeoutMs: body.wait_ms + this.timeoutMs,
    })) as { calls?: ClaimedHostCall[] } | null;
    return Array.isArray(answer?.calls) ? answer.calls : [];
  }

  async renew(callId: string): Promise<{ lease_ms?: number }> {
    return ((await this.post(INTERNAL_ROUTES.renew(callId), {})) ?? {}) as { lease_ms?: number };
  }

  async reportOutcome(callId: string, outcome: HostCallOutcome): Promise<void> {
    await this.post(INTERNAL_ROUTES.outcome(callId), outcome);
  }

  close(): void {
    this.agent.destroy();
  }

  private get timeoutMs(): number {
    return this.options.timeoutMs ?? 15_000;
  }

  private urlOf(path: string): URL {
    const prefix = this.base.pathname.replace(/\/+$/, '');
    return new URL(`${prefix}${path}`, this.base);
  }

  private post(
    path: string,
    body: unknown,
    opts: { auth?: boolean; signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<unknown> {
    const url = this.urlOf(path);
    const payload = Buffer.from(JSON.stringify(body));
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': payload.length,
      accept: 'application/json',
    };
    if (opts.auth !== false && this.options.credential) headers.authorization = `Bearer ${this.options.credential}`;
    const request = url.protocol === 'https:' ? https.request : http.request;
    const where = url.toString();
    return new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', headers, agent: this.agent, signal: opts.signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (err: NodeJS.ErrnoException) => reject(new HcpUnreachableError(where, err.code, err.message)));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          const json = parseJson(text);
          if (status >= 200 && status < 300) return resolve(json);
          const envelope = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
          reject(
            new HcpStatusError(
              where,
              status,
              typeof envelope?.code === 'string' ? envelope.code : undefined,
              typeof envelope?.message === 'string' ? envelope.message : undefined,
            ),
          );
        });
      });
      req.setTimeout(opts.timeoutMs ?? this.timeoutMs, () => {
        req.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' }));
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        reject(new HcpUnreachableError(where, err.code, err.message));
      });
      req.end(payload);
    });
  }
}

function parseJson(text: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
