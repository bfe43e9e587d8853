/**
 * One SOAP exchange with vCenter's `/sdk`: a POST of an envelope, the answer's text and cookies.
 * The exchange itself (TLS trust checked before any byte is written, the deadline, abort, request
 * timeout and body cap) is common/https/exchange.ts, as for Proxmox; what is vSphere's is here: the
 * SOAPAction of the vim25 release HCP speaks and the session cookie.
 */
import type https from 'node:https';
import { type HttpsClientOptions, httpsExchange, traceHeader } from '../common/https/exchange';
import { createTrustingAgent } from '../common/https/trusting-agent';
import type { CallContext } from '../spi/provider-driver';

export interface SoapExchangeAnswer {
  status: number;
  text: string;
  setCookie: string[];
}

// The vim25 release HCP speaks; vCenter 7.0 U3 and later answer it.
const SOAP_ACTION = '"urn:vim25/7.0.3.0"';

export class SoapHttp {
  readonly agent: https.Agent;

  constructor(readonly options: HttpsClientOptions) {
    this.agent = createTrustingAgent({ tls: options.tls, connectTimeoutMs: options.connectTimeoutMs });
  }

  close(): void {
    this.agent.destroy();
  }

  /** One POST. Throws TryFailure for anything that is not an HTTP answer. */
  async post(envelope: string, cookie: string | undefined, ctx: CallContext): Promise<SoapExchangeAnswer> {
    this.options.stats.requests++;
    const body = Buffer.from(envelope, 'utf8');
    const endpoint = this.options.endpoint;
    const answer = await httpsExchange(
      {
        agent: this.agent,
        endpoint,
        method: 'POST',
        path: endpoint.pathname || '/sdk',
        headers: {
          'Content-Type': 'text/xml; charset=utf-8',
          'Content-Length': body.length,
          SOAPAction: SOAP_ACTION,
          ...(cookie ? { Cookie: cookie } : {}),
          ...traceHeader(ctx),
        },
        body,
        maxBodyBytes: this.options.maxBodyBytes,
        requestTimeoutMs: this.options.requestTimeoutMs,
        now: this.options.now,
      },
      ctx,
    );
    return {
      status: answer.status,
      text: answer.body.toString('utf8'),
      setCookie: answer.headers['set-cookie'] ?? [],
    };
  }
}

/** `vmware_soap_session="..."` out of the Set-Cookie headers of a Login answer. */
export function sessionCookie(setCookie: string[]): string | undefined {
  for (const header of setCookie) {
    const first = header.split(';')[0]?.trim();
    if (first?.startsWith('vmware_soap_session=')) return first;
  }
  return undefined;
}
