import { inspect } from 'node:util';
import { decodeBase64Strict, encodeBase64 } from './encoding';
import { SecretsError, SecretsErrorCode } from './errors';
import { KeyWrapper, WrappedKey } from './key-wrapper';

/** The Vault token, or a function returning the current one (e.g. re-read from a file an agent renews). */
export type VaultTokenSource = string | (() => string | Promise<string>);

export interface VaultTransitOptions {
  /** Vault address, e.g. `https://vault.internal:8200`. */
  address: string;
  token: VaultTokenSource;
  /** Transit key name (the KEK in Vault). */
  keyName: string;
  /** Mount path of the transit engine. Default `transit`. */
  mount?: string;
  /** Vault Enterprise namespace, sent as `X-Vault-Namespace`. */
  namespace?: string;
  /** Deadline of one request. Default 10 s. */
  timeoutMs?: number;
  /** `http://` is accepted for loopback addresses only (the token travels in a header) unless this is true. */
  allowInsecureHttp?: boolean;
  /** For tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** A path segment: letters, digits, _ . - but not `.` or `..`, which URL normalisation would resolve. */
const NAME = /^(?!\.{1,2}$)[A-Za-z0-9_.-]+$/;
const VAULT_CIPHERTEXT = /^vault:v(\d+):[A-Za-z0-9+/=]+$/;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * KeyWrapper over HashiCorp Vault's transit secrets engine (HTTP API v1): data keys are sent base64 to
 * `POST /v1/<mount>/encrypt/<key>`, come back as `vault:vN:...`, are recovered with `/decrypt/<key>`
 * and moved to the latest key version with `/rewrap/<key>`, which never returns plaintext. The KEK never
 * leaves Vault; rotating it is `vault write -f <mount>/keys/<key>/rotate` followed by `KeyRotation`.
 *
 * Envelopes are unwrapped only with the configured mount and key; an envelope naming another Vault key
 * is refused rather than sent to whatever path it names.
 */
export class VaultTransitKeyWrapper implements KeyWrapper {
  static readonly ID = 'vault-transit';
  readonly id = VaultTransitKeyWrapper.ID;
  /** `<mount>/<key name>`, recorded as `keyId` in every wrapped key. */
  readonly keyId: string;
  readonly #base: string;
  readonly #origin: string;
  readonly #keyName: string;
  readonly #token: VaultTokenSource;
  readonly #namespace: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: VaultTransitOptions) {
    let url: URL;
    try {
      url = new URL(options.address);
    } catch {
      throw new SecretsError('CONFIG', 'Vault address is not a URL (expected e.g. https://vault.internal:8200)');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new SecretsError('CONFIG', 'Vault address must start with https:// (or http:// on loopback)');
    if (url.username || url.password || url.search || url.hash)
      throw new SecretsError('CONFIG', 'Vault address must not carry credentials, a query or a fragment');
    if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname) && !options.allowInsecureHttp) {
      throw new SecretsError(
        'CONFIG',
        `Vault address ${url.origin} uses plain http; the token would travel unencrypted. Use https:// (http:// is accepted for loopback only)`,
      );
    }
    const mount = (options.mount ?? 'transit').replace(/^\/+|\/+$/g, '');
    if (!mount.split('/').every((segment) => NAME.test(segment)))
      throw new SecretsError(
        'CONFIG',
        `Vault transit mount ${JSON.stringify(mount)} must be path segments of letters, digits, _ . - (not . or ..)`,
      );
    if (!NAME.test(options.keyName ?? ''))
      throw new SecretsError(
        'CONFIG',
        `Vault transit key name ${JSON.stringify(options.keyName ?? '')} must be letters, digits, _ . - (not . or ..)`,
      );
    if (typeof options.token === 'string' && options.token.trim() === '')
      throw new SecretsError('CONFIG', 'Vault token is empty');
    this.#origin = url.origin;
    this.#base = `${url.origin}${url.pathname.replace(/\/+$/, '')}/v1/${mount}`;
    this.#keyName = options.keyName;
    this.keyId = `${mount}/${options.keyName}`;
    this.#token = options.token;
    this.#namespace = options.namespace || undefined;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#fetch = options.fetch ?? fetch;
  }

  async wrap(dataKey: Buffer): Promise<WrappedKey> {
    const data = await this.#call('encrypt', { plaintext: encodeBase64(dataKey) });
    return this.#wrapped(data.ciphertext, 'encrypt');
  }

  async unwrap(wrapped: WrappedKey): Promise<Buffer> {
    this.#checkOwn(wrapped);
    const data = await this.#call('decrypt', { ciphertext: wrapped.ciphertext });
    return decodeBase64Strict(data.plaintext, 'Vault transit decrypt answer', 'WRAPPER_REJECTED');
  }

  async rewrap(wrapped: WrappedKey): Promise<WrappedKey> {
    this.#checkOwn(wrapped);
    const data = await this.#call('rewrap', { ciphertext: wrapped.ciphertext });
    return this.#wrapped(data.ciphertext, 'rewrap');
  }

  #checkOwn(wrapped: WrappedKey): void {
    if (wrapped.wrapper !== this.id)
      throw new SecretsError(
        'UNKNOWN_KEY',
        `data key was wrapped by ${JSON.stringify(wrapped.wrapper)}, not by Vault transit`,
      );
    if (wrapped.keyId !== this.keyId) {
      throw new SecretsError(
        'UNKNOWN_KEY',
        `data key is wrapped with Vault transit key ${JSON.stringify(wrapped.keyId)}, but this wrapper is configured for ${JSON.stringify(this.keyId)}`,
      );
    }
    if (typeof wrapped.ciphertext !== 'string' || !VAULT_CIPHERTEXT.test(wrapped.ciphertext))
      throw new SecretsError('INVALID_ENVELOPE', 'wrapped data key is not a Vault transit ciphertext (vault:vN:...)');
  }

  #wrapped(ciphertext: unknown, operation: string): WrappedKey {
    const match = typeof ciphertext === 'string' ? VAULT_CIPHERTEXT.exec(ciphertext) : null;
    if (!match)
      throw new SecretsError('WRAPPER_REJECTED', `Vault transit ${operation} answered without a vault:vN: ciphertext`);
    return { wrapper: this.id, keyId: this.keyId, keyVersion: Number(match[1]), ciphertext: ciphertext as string };
  }

  async #call(
    operation: 'encrypt' | 'decrypt' | 'rewrap',
    body: Record<string, string>,
  ): Promise<Record<string, unknown>> {
    const token = typeof this.#token === 'function' ? await this.#token() : this.#token;
    if (!token) throw new SecretsError('CONFIG', 'Vault token is empty');
    const what = `Vault transit ${operation} with key ${this.keyId}`;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-vault-token': token,
      'x-vault-request': 'true',
    };
    if (this.#namespace) headers['x-vault-namespace'] = this.#namespace;
    let response: Response;
    try {
      response = await this.#fetch(`${this.#base}/${operation}/${encodeURIComponent(this.#keyName)}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      const name = (error as Error)?.name;
      if (name === 'TimeoutError' || name === 'AbortError')
        throw new SecretsError(
          'WRAPPER_UNAVAILABLE',
          `${what}: ${this.#origin} did not answer within ${this.#timeoutMs} ms`,
        );
      const code = ((error as { cause?: { code?: unknown } })?.cause?.code as string | undefined) ?? 'network error';
      throw new SecretsError('WRAPPER_UNAVAILABLE', `${what}: ${this.#origin} is unreachable (${String(code)})`);
    }
    let json: unknown;
    try {
      const text = await response.text();
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (response.status >= 300 && response.status < 400) {
      throw new SecretsError(
        'WRAPPER_REJECTED',
        `${what}: ${this.#origin} answered a redirect (${response.status}); configure the address of a node that serves requests`,
      );
    }
    if (!response.ok) {
      const detail = vaultErrors(json, token);
      const code: SecretsErrorCode =
        response.status === 401 || response.status === 403
          ? 'WRAPPER_DENIED'
          : response.status === 429 || response.status >= 500
            ? 'WRAPPER_UNAVAILABLE'
            : operation === 'decrypt' && /authentication failed|unable to decrypt/i.test(detail)
              ? 'AUTHENTICATION_FAILED'
              : 'WRAPPER_REJECTED';
      throw new SecretsError(code, `${what}: Vault answered ${response.status}${detail ? ` (${detail})` : ''}`);
    }
    const data = (json as { data?: unknown } | undefined)?.data;
    if (typeof data !== 'object' || data === null)
      throw new SecretsError('WRAPPER_REJECTED', `${what}: Vault answered ${response.status} without a "data" object`);
    return data as Record<string, unknown>;
  }

  toJSON(): unknown {
    return { id: this.id, address: this.#origin, keyId: this.keyId };
  }

  [inspect.custom](): string {
    return `VaultTransitKeyWrapper { address: ${JSON.stringify(this.#origin)}, keyId: ${JSON.stringify(this.keyId)} }`;
  }
}

/** Vault's `{"errors": [...]}` strings, shortened, with the token removed should Vault ever echo it. */
function vaultErrors(json: unknown, token: string): string {
  const errors = (json as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return '';
  return errors
    .filter((e): e is string => typeof e === 'string')
    .slice(0, 3)
    .map((e) => e.split(token).join('[token]').replace(/\s+/g, ' ').slice(0, 200))
    .join('; ');
}
