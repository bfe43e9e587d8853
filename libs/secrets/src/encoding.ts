import { SecretsError, SecretsErrorCode } from './errors';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Strict standard base64 (padding required, no whitespace, no URL alphabet). `Buffer.from(s, 'base64')`
 * silently skips junk, which would let a corrupted key or envelope decode to something shorter instead of
 * failing. `what` names the field in the error; the value itself is never quoted.
 */
export function decodeBase64Strict(value: unknown, what: string, code: SecretsErrorCode): Buffer {
  if (typeof value !== 'string' || value.length === 0 || !BASE64.test(value)) {
    throw new SecretsError(code, `${what} is not valid base64`);
  }
  return Buffer.from(value, 'base64');
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
