/**
 * The port between envelope encryption and whoever holds the key-encryption keys (KEKs). A wrapper
 * encrypts ("wraps") a per-secret data key and decrypts it again; it never sees the secret itself.
 * `LocalKeyWrapper` keeps KEKs in process memory from configuration; `VaultTransitKeyWrapper` asks
 * HashiCorp Vault's transit engine, so the KEK never leaves Vault. A KMS wrapper would be a third
 * implementation of this same interface.
 */
export interface WrappedKey {
  /** Type of wrapper that produced this, equal to that wrapper's `id` (e.g. `local`, `vault-transit`). */
  wrapper: string;
  /** Which KEK: the keyring id (local) or `<mount>/<key name>` (Vault transit). */
  keyId: string;
  /** KEK version where the wrapper versions keys (Vault transit `vN`); absent for local KEKs. */
  keyVersion?: number;
  /** The wrapped data key, opaque to everyone but the wrapper (base64, or `vault:vN:...`). */
  ciphertext: string;
}

export interface KeyWrapper {
  /** Wrapper type, recorded in every envelope it wraps; selects the wrapper again on open. */
  readonly id: string;
  /** Wraps a data key with the currently active KEK. Must not keep or log `dataKey`. */
  wrap(dataKey: Buffer): Promise<WrappedKey>;
  /** Unwraps with the KEK the envelope names (not necessarily the active one). The caller zeroes the result. */
  unwrap(wrapped: WrappedKey): Promise<Buffer>;
  /**
   * Re-wraps under the active KEK without the data key leaving the wrapper (Vault's `rewrap` endpoint).
   * Optional: without it, rotation unwraps and wraps again in process.
   */
  rewrap?(wrapped: WrappedKey): Promise<WrappedKey>;
  /** True when `wrapped` already uses the active KEK, so rotation can skip it. Optional. */
  isCurrent?(wrapped: WrappedKey): boolean;
}
