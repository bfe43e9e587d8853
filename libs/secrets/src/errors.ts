/**
 * The one error type of the secrets library. Messages name what failed (which key id, which field, which
 * variable) and never carry secret material: no plaintext, no data key, no key-encryption key, no token,
 * no raw configuration value that could be a key. Causes from `node:crypto` or `JSON.parse` are not
 * attached, because their messages can quote the input.
 */
export type SecretsErrorCode =
  /** Keyring or wrapper configuration is unusable (bad base64, wrong length, missing active key, file mode). */
  | 'CONFIG'
  /** The caller passed something seal/open cannot take (empty AAD, too large, not serialisable). */
  | 'INVALID_INPUT'
  /** The stored envelope is not a well-formed sealed secret. */
  | 'INVALID_ENVELOPE'
  /** The envelope was written by a format this build does not read. */
  | 'UNSUPPORTED_VERSION'
  /** The envelope names a wrapper or key-encryption key this process does not have. */
  | 'UNKNOWN_KEY'
  /** AES-GCM refused: wrong key, wrong AAD, or tampered nonce, ciphertext or tag. */
  | 'AUTHENTICATION_FAILED'
  /** The external wrapper (Vault) could not be reached or answered 5xx/429: worth a retry. */
  | 'WRAPPER_UNAVAILABLE'
  /** The external wrapper refused our credentials (401/403). */
  | 'WRAPPER_DENIED'
  /** The external wrapper rejected the request (4xx other than auth) or answered something malformed. */
  | 'WRAPPER_REJECTED';

const RETRYABLE: ReadonlySet<SecretsErrorCode> = new Set(['WRAPPER_UNAVAILABLE']);

export class SecretsError extends Error {
  readonly code: SecretsErrorCode;
  readonly retryable: boolean;

  constructor(code: SecretsErrorCode, message: string) {
    super(message);
    this.name = 'SecretsError';
    this.code = code;
    this.retryable = RETRYABLE.has(code);
  }
}
