/**
 * VNC Authentication (RFC 6143 §7.2.2): the server sends a random 16-byte challenge, the client
 * answers with it DES-encrypted (ECB) under the password. Real servers and clients (libvncserver,
 * QEMU, noVNC) use only the password's first 8 bytes, zero-padded, and reverse the bit order of
 * each key byte; a response computed any other way is refused by them.
 */
import { DES } from 'des.js';

export const VNC_CHALLENGE_BYTES = 16;

function reverseBits(byte: number): number {
  let out = 0;
  for (let i = 0; i < 8; i++) out |= ((byte >> i) & 1) << (7 - i);
  return out;
}

/** The DES key of a VNC password: its first 8 bytes (latin1 for strings, as noVNC does), zero-padded, bits reversed. */
export function vncAuthKey(password: string | Buffer): Buffer {
  const bytes = typeof password === 'string' ? Buffer.from(password, 'latin1') : password;
  const key = Buffer.alloc(8);
  bytes.copy(key, 0, 0, Math.min(8, bytes.length));
  return Buffer.from(key.map(reverseBits));
}

export function vncAuthResponse(challenge: Buffer, password: string | Buffer): Buffer {
  if (challenge.length !== VNC_CHALLENGE_BYTES)
    throw new RangeError(`a VNC challenge has ${VNC_CHALLENGE_BYTES} bytes`);
  const cipher = DES.create({ type: 'encrypt', key: vncAuthKey(password), padding: false });
  return Buffer.from([...cipher.update(challenge), ...cipher.final()]);
}

/** Whether `response` answers `challenge` for `password`. */
export function checkVncAuthResponse(challenge: Buffer, response: Buffer, password: string | Buffer): boolean {
  if (response.length !== VNC_CHALLENGE_BYTES) return false;
  return vncAuthResponse(challenge, password).equals(response);
}
