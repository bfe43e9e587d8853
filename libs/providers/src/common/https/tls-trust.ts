/**
 * How a provider's HTTPS API is trusted, as HCP stores it in a provider's `tls`: a CA PEM and/or a
 * pinned SHA-256 fingerprint of the API certificate (see trusting-agent.ts for what each means on the
 * wire). Proxmox VE and vSphere take the same two fields, so a bad value fails at the ops API with the
 * same words whichever driver it is for.
 */
import { invalidField } from '@hcp/domain';

export interface TlsTrust {
  /** PEM of the CA that signed the API certificate (Proxmox's pve-root-ca.pem, a company CA). */
  ca_pem?: string;
  /** SHA-256 fingerprint of the API certificate, `AB:CD:...` or plain hex; pins that certificate. */
  fingerprint_sha256?: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Normalises `AB:CD:...`, `ab cd ...` or plain hex to 64 lower-case hex digits. */
export function normaliseFingerprint(fingerprint: string): string {
  return fingerprint.replace(/[:\s]/g, '').toLowerCase();
}

export function parseTlsTrust(raw: unknown): TlsTrust {
  if (raw === undefined || raw === null) return {};
  if (!isRecord(raw)) throw invalidField('tls', 'tls must be an object with ca_pem and/or fingerprint_sha256');
  const tls: TlsTrust = {};
  if (raw.ca_pem !== undefined) {
    if (typeof raw.ca_pem !== 'string' || !raw.ca_pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw invalidField('tls.ca_pem', 'ca_pem must be a PEM certificate');
    }
    tls.ca_pem = raw.ca_pem;
  }
  if (raw.fingerprint_sha256 !== undefined) {
    const fp = typeof raw.fingerprint_sha256 === 'string' ? normaliseFingerprint(raw.fingerprint_sha256) : '';
    if (!/^[0-9a-f]{64}$/.test(fp)) {
      throw invalidField(
        'tls.fingerprint_sha256',
        'fingerprint_sha256 must be 32 hex bytes (AB:CD:... as Proxmox shows it)',
      );
    }
    tls.fingerprint_sha256 = fp;
  }
  return tls;
}
