import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { decodeBase64Strict, encodeBase64 } from './encoding';
import { SecretsError } from './errors';
import { KeyWrapper, WrappedKey } from './key-wrapper';
import {
  NONCE_BYTES,
  parseSealedSecret,
  SEALED_SECRET_ALGORITHM,
  SEALED_SECRET_FORMAT,
  SealedContent,
  SealedSecret,
  TAG_BYTES,
} from './sealed-secret';

const DATA_KEY_BYTES = 32;
const AAD_CONTEXT = 'hcp-secrets/sealed';
export const DEFAULT_MAX_PLAINTEXT_BYTES = 64 * 1024;
const MAX_AAD_LENGTH = 1024;

export interface SecretBoxOptions {
  /**
   * Wrappers that may unwrap existing envelopes but never wrap new ones, by their `id` (e.g. the local
   * keyring while moving to Vault transit: `rewrap` then moves every envelope to the active wrapper).
   */
  readers?: KeyWrapper[];
  /** Largest plaintext `seal` accepts; provider credentials are small. Default 64 KiB. */
  maxPlaintextBytes?: number;
  /** Clock for `createdAt`/`rewrappedAt` (tests). */
  now?: () => Date;
}

/**
 * Envelope encryption of one secret at a time. `seal` draws a fresh random 256-bit data key, encrypts
 * the plaintext with AES-256-GCM under a random 96-bit nonce, binds the caller's AAD (e.g. the provider
 * id, so a sealed value copied onto another provider's row does not open there), and stores the data key
 * only wrapped by the `KeyWrapper`. Data keys and the serialised plaintext are zeroed after use; what
 * `open` returns belongs to the caller, who should zero it when done.
 */
export class SecretBox {
  readonly #wrapper: KeyWrapper;
  readonly #wrappers = new Map<string, KeyWrapper>();
  readonly #maxPlaintextBytes: number;
  readonly #now: () => Date;

  constructor(wrapper: KeyWrapper, options: SecretBoxOptions = {}) {
    this.#wrapper = wrapper;
    for (const reader of options.readers ?? []) this.#wrappers.set(reader.id, reader);
    this.#wrappers.set(wrapper.id, wrapper);
    this.#maxPlaintextBytes = options.maxPlaintextBytes ?? DEFAULT_MAX_PLAINTEXT_BYTES;
    this.#now = options.now ?? (() => new Date());
  }

  /** The wrapper new envelopes are wrapped with. */
  get wrapperId(): string {
    return this.#wrapper.id;
  }

  /** Encrypts `plaintext` (bytes, or an object serialised as JSON) bound to `aad`. */
  async seal(plaintext: Buffer | Uint8Array | object, aad: string): Promise<SealedSecret> {
    checkAad(aad);
    const { bytes, content, owned } = toBytes(plaintext);
    const dataKey = randomBytes(DATA_KEY_BYTES);
    try {
      if (bytes.length > this.#maxPlaintextBytes) {
        throw new SecretsError(
          'INVALID_INPUT',
          `secret is ${bytes.length} bytes; at most ${this.#maxPlaintextBytes} are accepted`,
        );
      }
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', dataKey, nonce, { authTagLength: TAG_BYTES });
      cipher.setAAD(boundAad(content, aad));
      const ciphertext = Buffer.concat([cipher.update(bytes), cipher.final()]);
      const tag = cipher.getAuthTag();
      const key = checkWrapped(await this.#wrapper.wrap(dataKey), this.#wrapper);
      return {
        v: SEALED_SECRET_FORMAT,
        alg: SEALED_SECRET_ALGORITHM,
        content,
        wrapper: key.wrapper,
        key,
        nonce: encodeBase64(nonce),
        ciphertext: encodeBase64(ciphertext),
        tag: encodeBase64(tag),
        createdAt: this.#now().toISOString(),
      };
    } finally {
      dataKey.fill(0);
      if (owned) bytes.fill(0);
    }
  }

  /** Decrypts a sealed secret (object or its JSON text) bound to `aad`; returns the plaintext bytes. */
  async open(sealed: unknown, aad: string): Promise<Buffer> {
    checkAad(aad);
    const s = parseSealedSecret(sealed);
    const nonce = decodeBase64Strict(s.nonce, 'sealed secret "nonce"', 'INVALID_ENVELOPE');
    const tag = decodeBase64Strict(s.tag, 'sealed secret "tag"', 'INVALID_ENVELOPE');
    const ciphertext =
      s.ciphertext === ''
        ? Buffer.alloc(0)
        : decodeBase64Strict(s.ciphertext, 'sealed secret "ciphertext"', 'INVALID_ENVELOPE');
    const dataKey = await this.#unwrap(s.key);
    let first: Buffer | undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', dataKey, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(boundAad(s.content, aad));
      decipher.setAuthTag(tag);
      first = decipher.update(ciphertext);
      let last: Buffer;
      try {
        last = decipher.final();
      } catch {
        throw new SecretsError(
          'AUTHENTICATION_FAILED',
          'cannot open sealed secret: authentication failed (it belongs to another record, i.e. the AAD differs, or its nonce, ciphertext or tag were altered)',
        );
      }
      const plaintext = Buffer.concat([first, last]);
      last.fill(0);
      return plaintext;
    } finally {
      dataKey.fill(0);
      first?.fill(0);
    }
  }

  /** `open` for secrets sealed from an object: returns the object. */
  async openJson<T = unknown>(sealed: unknown, aad: string): Promise<T> {
    const s = parseSealedSecret(sealed);
    if (s.content !== 'json')
      throw new SecretsError('INVALID_INPUT', 'sealed secret holds bytes, not JSON: use open()');
    const bytes = await this.open(s, aad);
    try {
      return JSON.parse(bytes.toString('utf8')) as T;
    } catch {
      // Unreachable for envelopes this library wrote (the content is authenticated); never quote it.
      throw new SecretsError('INVALID_ENVELOPE', 'sealed secret content is not valid JSON');
    } finally {
      bytes.fill(0);
    }
  }

  /** True when the envelope's data key is already wrapped by the active wrapper's active KEK. */
  isCurrent(sealed: unknown): boolean {
    const s = parseSealedSecret(sealed);
    return s.key.wrapper === this.#wrapper.id && (this.#wrapper.isCurrent?.(s.key) ?? false);
  }

  /**
   * Re-wraps only the data key with the active wrapper and KEK; nonce, ciphertext and tag are untouched,
   * so no AAD is needed and the secret itself is never decrypted. With Vault transit the data key does not
   * even leave Vault (its rewrap endpoint); otherwise it is unwrapped, wrapped again and zeroed.
   */
  async rewrap(sealed: unknown): Promise<SealedSecret> {
    const s = parseSealedSecret(sealed);
    let key: WrappedKey;
    if (s.key.wrapper === this.#wrapper.id && this.#wrapper.rewrap) {
      key = checkWrapped(await this.#wrapper.rewrap(s.key), this.#wrapper);
    } else {
      const dataKey = await this.#unwrap(s.key);
      try {
        key = checkWrapped(await this.#wrapper.wrap(dataKey), this.#wrapper);
      } finally {
        dataKey.fill(0);
      }
    }
    return { ...s, wrapper: key.wrapper, key, rewrappedAt: this.#now().toISOString() };
  }

  async #unwrap(wrapped: WrappedKey): Promise<Buffer> {
    const wrapper = this.#wrappers.get(wrapped.wrapper);
    if (!wrapper) {
      throw new SecretsError(
        'UNKNOWN_KEY',
        `sealed secret's data key was wrapped by ${JSON.stringify(wrapped.wrapper)}, which this process is not configured for (configured: ${[...this.#wrappers.keys()].join(', ')})`,
      );
    }
    const dataKey = await wrapper.unwrap(wrapped);
    if (dataKey.length !== DATA_KEY_BYTES) {
      dataKey.fill(0);
      throw new SecretsError(
        'INVALID_ENVELOPE',
        `unwrapped data key is ${dataKey.length} bytes, expected ${DATA_KEY_BYTES}`,
      );
    }
    return dataKey;
  }

  toJSON(): unknown {
    return { wrapper: this.#wrapper.id, readers: [...this.#wrappers.keys()] };
  }

  [inspect.custom](): string {
    return `SecretBox { wrapper: ${JSON.stringify(this.#wrapper.id)} }`;
  }
}

function checkAad(aad: unknown): void {
  if (typeof aad !== 'string' || aad.length === 0) {
    throw new SecretsError(
      'INVALID_INPUT',
      'aad is required: pass the id of the record the secret belongs to (e.g. the provider id)',
    );
  }
  if (aad.length > MAX_AAD_LENGTH)
    throw new SecretsError('INVALID_INPUT', `aad is longer than ${MAX_AAD_LENGTH} characters`);
}

/** The header fields that must not change are authenticated together with the caller's AAD. */
function boundAad(content: SealedContent, aad: string): Buffer {
  return Buffer.from(
    `${AAD_CONTEXT}\0v${SEALED_SECRET_FORMAT}\0${SEALED_SECRET_ALGORITHM}\0${content}\0${aad}`,
    'utf8',
  );
}

function toBytes(plaintext: unknown): { bytes: Buffer; content: SealedContent; owned: boolean } {
  if (Buffer.isBuffer(plaintext)) return { bytes: plaintext, content: 'bytes', owned: false };
  if (plaintext instanceof Uint8Array)
    return {
      bytes: Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength),
      content: 'bytes',
      owned: false,
    };
  if (typeof plaintext !== 'object' || plaintext === null) {
    throw new SecretsError('INVALID_INPUT', 'secret must be a Buffer or an object (serialised as JSON)');
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(plaintext);
  } catch {
    throw new SecretsError('INVALID_INPUT', 'secret object cannot be serialised as JSON (cycle or BigInt)');
  }
  if (json === undefined) throw new SecretsError('INVALID_INPUT', 'secret object cannot be serialised as JSON');
  // The JSON string itself cannot be zeroed (JavaScript strings are immutable); its bytes can.
  const bytes = Buffer.alloc(Buffer.byteLength(json, 'utf8'));
  bytes.write(json, 'utf8');
  return { bytes, content: 'json', owned: true };
}

function checkWrapped(key: WrappedKey, wrapper: KeyWrapper): WrappedKey {
  if (!key || key.wrapper !== wrapper.id || typeof key.keyId !== 'string' || typeof key.ciphertext !== 'string') {
    throw new SecretsError(
      'WRAPPER_REJECTED',
      `key wrapper ${JSON.stringify(wrapper.id)} returned a malformed wrapped key`,
    );
  }
  return key;
}
