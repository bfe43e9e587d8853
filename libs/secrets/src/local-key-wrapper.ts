import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { decodeBase64Strict, encodeBase64 } from './encoding';
import { SecretsError } from './errors';
import { KeyWrapper, WrappedKey } from './key-wrapper';
import { Keyring } from './keyring';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const WRAP_CONTEXT = 'hcp-secrets/kek-wrap/v1';

/**
 * Wraps data keys with AES-256-GCM under a KEK from a `Keyring` held in this process. The wrapped form is
 * base64(nonce 12 ‖ ciphertext ‖ tag 16). The KEK id is bound into the GCM additional data, so an
 * envelope relabelled to another id fails to unwrap instead of being tried with the wrong key.
 */
export class LocalKeyWrapper implements KeyWrapper {
  static readonly ID = 'local';
  readonly id = LocalKeyWrapper.ID;
  readonly #keyring: Keyring;

  constructor(keyring: Keyring) {
    this.#keyring = keyring;
  }

  /** The live keyring: `add`/`activate`/`remove` on it take effect for the next wrap or unwrap. */
  get keyring(): Keyring {
    return this.#keyring;
  }

  async wrap(dataKey: Buffer): Promise<WrappedKey> {
    const keyId = this.#keyring.activeKeyId;
    const kek = this.#keyring.keyObject(keyId);
    if (!kek)
      throw new SecretsError('UNKNOWN_KEY', `active key-encryption key ${JSON.stringify(keyId)} is not in the keyring`);
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', kek, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aadFor(keyId));
    const body = Buffer.concat([nonce, cipher.update(dataKey), cipher.final(), cipher.getAuthTag()]);
    return { wrapper: this.id, keyId, ciphertext: encodeBase64(body) };
  }

  async unwrap(wrapped: WrappedKey): Promise<Buffer> {
    if (wrapped.wrapper !== this.id)
      throw new SecretsError(
        'UNKNOWN_KEY',
        `data key was wrapped by ${JSON.stringify(wrapped.wrapper)}, not by the local keyring`,
      );
    const kek = this.#keyring.keyObject(wrapped.keyId);
    if (!kek) {
      throw new SecretsError(
        'UNKNOWN_KEY',
        `data key is wrapped with key-encryption key ${JSON.stringify(wrapped.keyId)}, which is not in the keyring (known ids: ${this.#keyring.ids().join(', ')})`,
      );
    }
    const body = decodeBase64Strict(wrapped.ciphertext, 'wrapped data key', 'INVALID_ENVELOPE');
    if (body.length <= NONCE_BYTES + TAG_BYTES)
      throw new SecretsError('INVALID_ENVELOPE', 'wrapped data key is too short');
    const decipher = createDecipheriv('aes-256-gcm', kek, body.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(aadFor(wrapped.keyId));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    const first = decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES));
    try {
      const last = decipher.final();
      const dataKey = Buffer.concat([first, last]);
      last.fill(0);
      return dataKey;
    } catch {
      throw new SecretsError(
        'AUTHENTICATION_FAILED',
        `cannot unwrap data key with key-encryption key ${JSON.stringify(wrapped.keyId)}: authentication failed (the key material differs from the one that wrapped it, or the wrapped key was altered)`,
      );
    } finally {
      first.fill(0);
    }
  }

  isCurrent(wrapped: WrappedKey): boolean {
    return wrapped.wrapper === this.id && wrapped.keyId === this.#keyring.activeKeyId;
  }

  toJSON(): unknown {
    return { id: this.id, keyring: this.#keyring.toJSON() };
  }

  [inspect.custom](): string {
    return `LocalKeyWrapper { activeKeyId: ${JSON.stringify(this.#keyring.activeKeyId)}, keyIds: [${this.#keyring.ids().join(', ')}] }`;
  }
}

function aadFor(keyId: string): Buffer {
  return Buffer.from(`${WRAP_CONTEXT}\0${keyId}`, 'utf8');
}
