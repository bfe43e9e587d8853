import { decodeBase64Strict } from './encoding';
import { SecretsError } from './errors';
import { WrappedKey } from './key-wrapper';

export const SEALED_SECRET_FORMAT = 1;
export const SEALED_SECRET_ALGORITHM = 'AES-256-GCM';
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

/** How the plaintext was given to `seal`, so `open` and `openJson` can return it the same way. */
export type SealedContent = 'bytes' | 'json';

/**
 * One encrypted secret, as stored (a jsonb column). Everything in it is safe to store and to show to
 * operators: the data key is only present wrapped, and the plaintext only as AES-GCM ciphertext.
 * `v`, `alg`, `content` and the caller's AAD are authenticated by the GCM tag; `createdAt` and
 * `rewrappedAt` are informational.
 */
export interface SealedSecret {
  /** Format version; `open` refuses versions it does not know. */
  v: typeof SEALED_SECRET_FORMAT;
  alg: typeof SEALED_SECRET_ALGORITHM;
  content: SealedContent;
  /** Wrapper type that wrapped the data key (same as `key.wrapper`). */
  wrapper: string;
  key: WrappedKey;
  /** base64, 12 bytes */
  nonce: string;
  /** base64 */
  ciphertext: string;
  /** base64, 16 bytes */
  tag: string;
  /** ISO-8601, when sealed */
  createdAt: string;
  /** ISO-8601, when the data key was last re-wrapped by a rotation */
  rewrappedAt?: string;
}

/** Non-sensitive facts about a sealed secret, for ops views and audits. */
export interface SecretDescription {
  format: number;
  algorithm: string;
  wrapper: string;
  keyId: string;
  keyVersion?: number;
  createdAt: string;
  rewrappedAt?: string;
}

function invalid(message: string): SecretsError {
  return new SecretsError('INVALID_ENVELOPE', `sealed secret ${message}`);
}

/**
 * Checks that `value` (a parsed jsonb value, or its JSON text) is a sealed secret this build can open and
 * returns it typed. Errors name the field, never its content.
 */
export function parseSealedSecret(value: unknown): SealedSecret {
  let raw = value;
  if (typeof raw === 'string') {
    try {
      raw = JSON.parse(raw);
    } catch {
      throw invalid('is not valid JSON');
    }
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('is not an object');
  const s = raw as Record<string, unknown>;
  if (typeof s.v !== 'number') throw invalid('has no format version "v"');
  if (s.v !== SEALED_SECRET_FORMAT) {
    throw new SecretsError(
      'UNSUPPORTED_VERSION',
      `sealed secret has format version ${Number.isSafeInteger(s.v) ? s.v : '(invalid)'}; this build reads version ${SEALED_SECRET_FORMAT}`,
    );
  }
  if (s.alg !== SEALED_SECRET_ALGORITHM)
    throw invalid(`has an unsupported algorithm (expected ${SEALED_SECRET_ALGORITHM})`);
  if (s.content !== 'bytes' && s.content !== 'json') throw invalid('has an unknown "content" (expected bytes or json)');
  if (typeof s.wrapper !== 'string' || s.wrapper.length === 0) throw invalid('has no "wrapper"');
  const key = s.key as Record<string, unknown> | null;
  if (typeof key !== 'object' || key === null || Array.isArray(key)) throw invalid('has no wrapped key "key"');
  if (typeof key.wrapper !== 'string' || key.wrapper !== s.wrapper)
    throw invalid('names a different wrapper in "key.wrapper" than in "wrapper"');
  if (typeof key.keyId !== 'string' || key.keyId.length === 0) throw invalid('has no "key.keyId"');
  if (key.keyVersion !== undefined && !(Number.isSafeInteger(key.keyVersion) && (key.keyVersion as number) > 0))
    throw invalid('has an invalid "key.keyVersion"');
  if (typeof key.ciphertext !== 'string' || key.ciphertext.length === 0) throw invalid('has no "key.ciphertext"');
  if (decodeBase64Strict(s.nonce, 'sealed secret "nonce"', 'INVALID_ENVELOPE').length !== NONCE_BYTES)
    throw invalid(`"nonce" is not ${NONCE_BYTES} bytes`);
  if (decodeBase64Strict(s.tag, 'sealed secret "tag"', 'INVALID_ENVELOPE').length !== TAG_BYTES)
    throw invalid(`"tag" is not ${TAG_BYTES} bytes`);
  if (typeof s.ciphertext !== 'string') throw invalid('has no "ciphertext"');
  if (s.ciphertext !== '') decodeBase64Strict(s.ciphertext, 'sealed secret "ciphertext"', 'INVALID_ENVELOPE');
  if (typeof s.createdAt !== 'string') throw invalid('has no "createdAt"');
  if (s.rewrappedAt !== undefined && typeof s.rewrappedAt !== 'string') throw invalid('has an invalid "rewrappedAt"');
  return {
    v: SEALED_SECRET_FORMAT,
    alg: SEALED_SECRET_ALGORITHM,
    content: s.content,
    wrapper: s.wrapper,
    key: {
      wrapper: key.wrapper,
      keyId: key.keyId,
      ...(key.keyVersion !== undefined ? { keyVersion: key.keyVersion as number } : {}),
      ciphertext: key.ciphertext,
    },
    nonce: s.nonce as string,
    ciphertext: s.ciphertext,
    tag: s.tag as string,
    createdAt: s.createdAt,
    ...(s.rewrappedAt !== undefined ? { rewrappedAt: s.rewrappedAt as string } : {}),
  };
}

/** What ops may see of a secret: which wrapper and KEK protect it and since when. Never the ciphertexts. */
export function describeSecret(sealed: unknown): SecretDescription {
  const s = parseSealedSecret(sealed);
  return {
    format: s.v,
    algorithm: s.alg,
    wrapper: s.wrapper,
    keyId: s.key.keyId,
    ...(s.key.keyVersion !== undefined ? { keyVersion: s.key.keyVersion } : {}),
    createdAt: s.createdAt,
    ...(s.rewrappedAt !== undefined ? { rewrappedAt: s.rewrappedAt } : {}),
  };
}
