import { randomBytes } from 'node:crypto';
import { checkVncAuthResponse, vncAuthKey, vncAuthResponse } from './vnc-auth';

describe('VNC authentication', () => {
  it('reverses the bits of each key byte and zero-pads short passwords', () => {
    expect(vncAuthKey('ab').toString('hex')).toBe('8646000000000000');
  });

  it('uses only the first 8 bytes of the password', () => {
    const challenge = randomBytes(16);
    expect(vncAuthResponse(challenge, 'PVEVNC:12345678')).toEqual(vncAuthResponse(challenge, 'PVEVNC:1'));
    expect(vncAuthResponse(challenge, 'PVEVNC:1')).not.toEqual(vncAuthResponse(challenge, 'PVEVNC:2'));
  });

  it('encrypts each half of the challenge with DES-ECB under the bit-reversed key', () => {
    // The textbook DES example: key 133457799BBCDFF1, plaintext 0123456789ABCDEF -> 85E813540F0AB405.
    // A VNC password whose bytes are that key with each byte's bits reversed yields that key.
    const password = Buffer.from('c82cea9ed93dfb8f', 'hex');
    expect(vncAuthKey(password).toString('hex')).toBe('133457799bbcdff1');
    const challenge = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
    expect(vncAuthResponse(challenge, password).toString('hex')).toBe('85e813540f0ab40585e813540f0ab405');
  });

  it('accepts the right response and refuses a wrong one', () => {
    const challenge = randomBytes(16);
    const response = vncAuthResponse(challenge, 'secret');
    expect(checkVncAuthResponse(challenge, response, 'secret')).toBe(true);
    expect(checkVncAuthResponse(challenge, response, 'Secret')).toBe(false);
    expect(checkVncAuthResponse(challenge, response.subarray(0, 8), 'secret')).toBe(false);
  });

  it('refuses a challenge of the wrong size', () => {
    expect(() => vncAuthResponse(Buffer.alloc(8), 'x')).toThrow(RangeError);
  });
});
