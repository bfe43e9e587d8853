/**
 * OpenSSH public key lines (`<type> <base64 blob> [comment]`), checked the way `ssh-keygen -l` would
 * take them: Proxmox runs every cloud-init key through ssh-keygen and refuses the whole config when one
 * fails, so HCP refuses such a key at the API instead of inside a job.
 */

export const SSH_KEY_TYPES = [
  'ssh-rsa',
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
] as const;

export type SshKeyType = (typeof SSH_KEY_TYPES)[number];

/** Longest key line accepted (an RSA 16384-bit key is about 2.8 KB). */
export const SSH_KEY_MAX_LENGTH = 8192;
export const SSH_KEY_COMMENT_MAX_LENGTH = 255;

export interface SshPublicKey {
  type: SshKeyType;
  /** The base64 blob as given. */
  blob: string;
  comment?: string;
}

export type SshKeyParse = { ok: true; key: SshPublicKey } | { ok: false; problem: string };

const isKeyType = (t: string): t is SshKeyType => (SSH_KEY_TYPES as readonly string[]).includes(t);

export function parseSshPublicKey(line: unknown): SshKeyParse {
  const fail = (problem: string): SshKeyParse => ({ ok: false, problem });
  if (typeof line !== 'string') return fail('is not a string');
  if (line.length > SSH_KEY_MAX_LENGTH) return fail(`is longer than ${SSH_KEY_MAX_LENGTH} characters`);
  if (/[\r\n\0]/.test(line)) return fail('must be a single line');
  const m = /^(\S+) +(\S+)(?: +(.*))?$/.exec(line.trim());
  if (!m) return fail('must be "<type> <base64 key> [comment]"');
  const [, type, blob, rawComment] = m;
  if (!isKeyType(type)) return fail(`has an unsupported key type (accepted: ${SSH_KEY_TYPES.join(', ')})`);
  const bytes = decodeBase64(blob);
  if (!bytes) return fail('has a key that is not valid base64');
  const problem = checkBlob(type, bytes);
  if (problem) return fail(problem);
  const comment = rawComment?.trim();
  if (comment && comment.length > SSH_KEY_COMMENT_MAX_LENGTH) {
    return fail(`has a comment longer than ${SSH_KEY_COMMENT_MAX_LENGTH} characters`);
  }
  return { ok: true, key: { type, blob, ...(comment ? { comment } : {}) } };
}

/** What is wrong with the blob of a key of this type (the SSH wire strings ssh-keygen reads), or undefined. */
function checkBlob(type: SshKeyType, bytes: Uint8Array): string | undefined {
  const reader = new WireReader(bytes);
  const embedded = reader.text();
  if (embedded === undefined) return 'has a key blob too short to hold its type';
  if (embedded !== type) return `declares ${type} but its key blob is of type ${embedded}`;
  const curve = /nistp(256|384|521)/.exec(type)?.[0];
  if (curve) {
    if (reader.text() !== curve) return `has a key blob whose curve is not ${curve}`;
    if (!reader.bytes()?.length) return 'has a key blob without its public point';
  } else if (type === 'ssh-rsa') {
    if (!reader.bytes()?.length || !reader.bytes()?.length) return 'has a key blob without its exponent and modulus';
  } else if (reader.bytes()?.length !== 32) {
    return 'has a key blob without its 32-byte public key';
  }
  // Security keys also name the application (usually "ssh:").
  if (type.startsWith('sk-') && reader.text() === undefined) return 'has a key blob without its application';
  if (!reader.atEnd()) return 'has trailing bytes in its key blob';
  return undefined;
}

class WireReader {
  private at = 0;
  constructor(private readonly data: Uint8Array) {}

  bytes(): Uint8Array | undefined {
    if (this.at + 4 > this.data.length) return undefined;
    const d = this.data;
    const length = ((d[this.at] << 24) | (d[this.at + 1] << 16) | (d[this.at + 2] << 8) | d[this.at + 3]) >>> 0;
    const start = this.at + 4;
    if (start + length > d.length) return undefined;
    this.at = start + length;
    return d.subarray(start, start + length);
  }

  text(): string | undefined {
    const b = this.bytes();
    if (!b) return undefined;
    let out = '';
    for (const c of b) {
      if (c < 0x20 || c > 0x7e) return undefined;
      out += String.fromCharCode(c);
    }
    return out;
  }

  atEnd(): boolean {
    return this.at === this.data.length;
  }
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Strict standard base64 (padding required); undefined when the text is not that. */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const n =
      (BASE64.indexOf(text[i]) << 18) |
      (BASE64.indexOf(text[i + 1]) << 12) |
      ((text[i + 2] === '=' ? 0 : BASE64.indexOf(text[i + 2])) << 6) |
      (text[i + 3] === '=' ? 0 : BASE64.indexOf(text[i + 3]));
    for (const shift of [16, 8, 0]) if (o < out.length) out[o++] = (n >> shift) & 0xff;
  }
  return out;
}
