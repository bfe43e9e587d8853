/**
 * One SOAP exchange with vCenter's `/sdk`: a POST of an envelope, the answer's text and cookies.
 * TLS trust is Proxmox's (proxmox-tls.ts: CA and/or pinned SHA-256 fingerprint, checked before any
 * byte is written), the deadline, abort and request timeout handling is Proxmox's too (settleOnce):
 * one way to talk HTTPS to a hypervisor API, whichever it is.
 */
import https from 'node:https';
import type { ProxmoxTls } from '../proxmox/proxmox-config';
import { TryFailure, connectionFailure, settleOnce, traceHeader } from '../proxmox/proxmox-http';
import { createProxmoxAgent } from '../proxmox/proxmox-tls';
import type { CallContext } from '../spi/provider-driver';

export { TryFailure };

export interface SoapExchangeAnswer {
  status: number;
  text: string;
  setCookie: string[];
}

export interface SoapHttpOptions {
  endpoint: URL;
  tls: ProxmoxTls;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  maxBodyBytes: number;
  now: () => number;
  stats: { requests: number };
}

// The vim25 release HCP speaks; vCenter 7.0 U3 and later answer it.
const SOAP_ACTION = '"urn:vim25/7.0.3.0"';

export class SoapHttp {
  readonly agent: https.Agent;

  constructor(readonly options: SoapHttpOptions) {
    this.agent = createProxmoxAgent({ tls: options.tls, connectTimeoutMs: options.connectTimeoutMs });
  }

  close(): void {
    this.agent.destroy();
  }

  /** One POST. Throws TryFailure for anything that is not an HTTP answer. */
  post(envelope: string, cookie: string | undefined, ctx: CallContext): Promise<SoapExchangeAnswer> {
    this.options.stats.requests++;
    const body = Buffer.from(envelope, 'utf8');
    const base = this.options.endpoint;
    const headers: Record<string, string | number> = {
      'Content-Type': 'text/xml; charset=utf-8',
      'Content-Length': body.length,
      SOAPAction: SOAP_ACTION,
      ...(cookie ? { Cookie: cookie } : {}),
      ...traceHeader(ctx),
    };
    return new Promise<SoapExchangeAnswer>((resolve, reject) => {
      const { finish, fail, watchAbort } = settleOnce(
        ctx,
        this.options.now,
        this.options.requestTimeoutMs,
        () => req.destroy(),
        reject,
      );
      const req = https.request(
        {
          protocol: 'https:',
          hostname: base.hostname.replace(/^\[(.*)\]$/, '$1'),
          port: Number(base.port) || 443,
          method: 'POST',
          path: base.pathname || '/sdk',
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
            finish(() =>
              resolve({
                status: res.statusCode ?? 0,
                text: Buffer.concat(chunks).toString('utf8'),
                setCookie: res.headers['set-cookie'] ?? [],
              }),
            ),
          );
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => fail(connectionFailure(err)));
      if (watchAbort()) req.end(body);
    });
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
