/**
 * Self-signed TLS material for the simulator, made with node:crypto alone: a CA (like Proxmox's
 * pve-root-ca) and a server certificate it signs (like pve-ssl.pem), ECDSA P-256, with the SANs
 * localhost, 127.0.0.1 and ::1. Node cannot write X.509 itself, so the DER is assembled here; it is
 * small because only what a TLS client checks is included.
 */
import { X509Certificate, createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

// --- minimal DER ---------------------------------------------------------------------------------

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, content: Buffer): Buffer =>
  Buffer.concat([Buffer.from([tag]), length(content.length), content]);
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer) => tlv(0x04, b);
const bitString = (b: Buffer, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);

function integer(b: Buffer): Buffer {
  let bytes = b;
  while (bytes.length > 1 && bytes[0] === 0 && (bytes[1] & 0x80) === 0) bytes = bytes.subarray(1);
  if (bytes[0] & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [40 * parts[0] + parts[1]];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [];
    let v = p;
    do {
      chunk.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    for (let i = 0; i < chunk.length - 1; i++) chunk[i] |= 0x80;
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const body = `${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  const year = d.getUTCFullYear();
  return year < 2050
    ? tlv(0x17, Buffer.from(`${p(year % 100)}${body}`))
    : tlv(0x18, Buffer.from(`${p(year, 4)}${body}`));
}

const name = (cn: string, org: string) => seq(set(seq(oid('2.5.4.10'), utf8(org))), set(seq(oid('2.5.4.3'), utf8(cn))));

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  // Expand :: for IPv6.
  const [head, tail] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

interface CertInput {
  subject: Buffer;
  issuer: Buffer;
  publicKey: KeyObject;
  signingKey: KeyObject;
  issuerKeyId?: Buffer;
  ca: boolean;
  altNames?: string[];
  days: number;
}

function certificate(input: CertInput): { der: Buffer; keyId: Buffer } {
  const spki = input.publicKey.export({ type: 'spki', format: 'der' });
  // Subject key id: SHA-1 of the whole SPKI (method 1 of RFC 7093 uses the key bits; either is fine).
  const keyId = createHash('sha1').update(spki).digest();
  const now = Date.now();
  const extensions = [
    extension('2.5.29.19', true, input.ca ? seq(bool(true)) : seq()),
    // keyUsage: CA = keyCertSign + cRLSign; server = digitalSignature + keyEncipherment.
    extension('2.5.29.15', true, input.ca ? bitString(Buffer.from([0x06]), 1) : bitString(Buffer.from([0xa0]), 5)),
    extension('2.5.29.14', false, octets(keyId)),
  ];
  if (input.issuerKeyId) extensions.push(extension('2.5.29.35', false, seq(tlv(0x80, input.issuerKeyId))));
  if (!input.ca) {
    extensions.push(extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))));
    const names = (input.altNames ?? []).map((n) =>
      isIPv4(n) || isIPv6(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, Buffer.from(n, 'ascii')),
    );
    extensions.push(extension('2.5.29.17', false, seq(...names)));
  }
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(Buffer.concat([Buffer.from([0x01]), randomBytes(15)])),
    ECDSA_SHA256,
    input.issuer,
    seq(time(new Date(now - 60 * 60_000)), time(new Date(now + input.days * 86_400_000))),
    input.subject,
    Buffer.from(spki),
    explicit(3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: input.signingKey, dsaEncoding: 'der' });
  return { der: seq(tbs, ECDSA_SHA256, bitString(signature)), keyId };
}

const pem = (der: Buffer) =>
  `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;

export interface SimulatorTlsMaterial {
  /** The CA that signed the server certificate (what a client passes as `ca_pem`). */
  caPem: string;
  /** Server certificate and key. */
  certPem: string;
  keyPem: string;
  /** SHA-256 of the server certificate, `AB:CD:...` as Proxmox shows it. */
  fingerprint256: string;
}

export function generateTlsMaterial(
  options: { commonName?: string; altNames?: string[]; days?: number } = {},
): SimulatorTlsMaterial {
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const serverKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const caName = name('Proxmox Virtual Environment (simulator) CA', 'PVE Cluster Manager CA');
  const ca = certificate({
    subject: caName,
    issuer: caName,
    publicKey: caKeys.publicKey,
    signingKey: caKeys.privateKey,
    ca: true,
    days: options.days ?? 30,
  });
  const server = certificate({
    subject: name(options.commonName ?? 'localhost', 'PVE Cluster Node'),
    issuer: caName,
    publicKey: serverKeys.publicKey,
    signingKey: caKeys.privateKey,
    issuerKeyId: ca.keyId,
    ca: false,
    altNames: options.altNames ?? ['localhost', '127.0.0.1', '::1'],
    days: options.days ?? 30,
  });
  const certPem = pem(server.der);
  const x509 = new X509Certificate(certPem);
  if (!x509.verify(caKeys.publicKey)) throw new Error('generated certificate does not verify');
  return {
    caPem: pem(ca.der),
    certPem,
    keyPem: serverKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    fingerprint256: x509.fingerprint256,
  };
}
