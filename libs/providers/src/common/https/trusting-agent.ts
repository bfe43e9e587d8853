/**
 * An HTTPS agent towards a hypervisor API (Proxmox VE, vCenter) that enforces the provider's TLS
 * trust (tls-trust.ts). Three ways to trust the server, never none:
 * - a CA PEM (Proxmox's own pve-root-ca, or a company CA): chain and host name are verified;
 * - a pinned SHA-256 fingerprint of the API certificate (what `pvenode cert info` shows): the chain
 *   is not verified, the certificate must be exactly that one;
 * - neither: the system's CAs, as for any HTTPS server.
 * With both a CA and a fingerprint, both must hold.
 *
 * The check runs before the socket is handed to the HTTP client, so no request (and so no
 * credential) is ever written to a server that failed it.
 */
import { createHash } from 'node:crypto';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { normaliseFingerprint, type TlsTrust } from './tls-trust';

export class TlsTrustError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'TlsTrustError';
  }
}

export interface TrustingAgentOptions {
  tls: TlsTrust;
  /** Time to open TCP and finish the TLS handshake. */
  connectTimeoutMs: number;
  maxSockets?: number;
}

/** SHA-256 over the DER certificate, lower-case hex: the same value as `fingerprint256` without colons. */
export function certificateFingerprint(raw: Buffer): string {
  return createHash('sha256').update(raw).digest('hex');
}

type CreateCallback = (err: Error | null, socket?: Duplex) => void;

class TrustingAgent extends https.Agent {
  constructor(
    private readonly trust: TlsTrust,
    private readonly connectTimeoutMs: number,
    maxSockets: number,
  ) {
    // Idle sockets are closed after 4 s, before a server's keep-alive timeout can close them under a
    // request (pveproxy and Node both allow about 5 s).
    super({
      keepAlive: true,
      keepAliveMsecs: 1000,
      timeout: 4000,
      maxSockets,
      maxFreeSockets: Math.min(maxSockets, 8),
      scheduling: 'lifo',
    });
  }

  override createConnection(options: tls.ConnectionOptions, callback: CreateCallback): Duplex | undefined {
    const pinned = this.trust.fingerprint_sha256 ? normaliseFingerprint(this.trust.fingerprint_sha256) : undefined;
    const ca = this.trust.ca_pem;
    const socket = tls.connect({
      ...options,
      // Sessions are never resumed: a resumed session may not present the certificate again.
      session: undefined,
      ...(ca ? { ca } : {}),
      // Only a pinned fingerprint without a CA lifts chain verification, and the pin replaces it.
      rejectUnauthorized: !(pinned && !ca),
    });
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      socket.setTimeout(0);
      if (err) {
        socket.destroy();
        callback(err);
      } else {
        callback(null, socket);
      }
    };
    socket.setTimeout(this.connectTimeoutMs, () =>
      settle(Object.assign(new Error('connecting to Proxmox timed out'), { code: 'ETIMEDOUT' })),
    );
    socket.once('error', (err) => settle(err));
    socket.once('secureConnect', () => {
      if (pinned) {
        const cert = socket.getPeerCertificate();
        const actual = cert?.raw ? certificateFingerprint(cert.raw) : '';
        if (actual !== pinned) {
          settle(
            new TlsTrustError('FINGERPRINT_MISMATCH', 'the Proxmox certificate does not match the pinned fingerprint'),
          );
          return;
        }
      }
      settle(null);
    });
    return undefined;
  }
}

/** An HTTPS agent that enforces the provider's trust settings. */
export function createTrustingAgent(options: TrustingAgentOptions): https.Agent {
  return new TrustingAgent(options.tls, options.connectTimeoutMs, options.maxSockets ?? 16);
}

/** TLS verification codes (OpenSSL's and Node's) that mean "not trusted", as opposed to "not reachable". */
const TRUST_CODES = new Set([
  'FINGERPRINT_MISMATCH',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
]);

export function isTlsTrustFailure(code: string | undefined): boolean {
  return !!code && TRUST_CODES.has(code);
}
