import { createSecretKey, KeyObject, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspect } from 'node:util';
import { decodeBase64Strict, encodeBase64 } from './encoding';
import { SecretsError } from './errors';

/** KEK ids: short, printable, never mistaken for a key (a 32-byte key in base64 is 44 characters). */
export const KEK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;
export const KEK_BYTES = 32;

/** Quotes an id in a message only when it looks like an id, so a key pasted in the wrong place is never echoed. */
function quoteId(id: string): string {
  return KEK_ID_PATTERN.test(id) ? JSON.stringify(id) : '(an invalid id, not shown)';
}

function configError(message: string): SecretsError {
  return new SecretsError('CONFIG', message);
}

/**
 * Key-encryption keys by id, one of them active (used to wrap new data keys). The others stay for
 * unwrapping envelopes written before a rotation. Key material is held as `KeyObject`s in a private field:
 * it is not reachable through JSON.stringify, util.inspect or a logger that walks the object.
 *
 * A keyring can change while the process runs (`add`, `activate`, `remove`), which is how a rotation is
 * done without a restart; readers opening secrets at the same time see either the old or the new active
 * key, and both unwrap because both are in the ring until the rotation is finished.
 */
export class Keyring {
  readonly #keys = new Map<string, KeyObject>();
  #activeKeyId: string;

  /** Takes ownership of the buffers in `keys` and zeroes them once they are imported. */
  constructor(activeKeyId: string, keys: Iterable<[string, Buffer]>) {
    for (const [id, key] of keys) this.add(id, key);
    if (!this.#keys.has(activeKeyId)) {
      throw configError(
        `active key-encryption key ${quoteId(activeKeyId)} is not in the keyring (known ids: ${this.ids().join(', ') || 'none'})`,
      );
    }
    this.#activeKeyId = activeKeyId;
  }

  get activeKeyId(): string {
    return this.#activeKeyId;
  }

  ids(): string[] {
    return [...this.#keys.keys()].sort();
  }

  has(id: string): boolean {
    return this.#keys.has(id);
  }

  /** Adds a KEK (32 bytes); the buffer is zeroed after import. Adding an existing id is refused. */
  add(id: string, key: Buffer): void {
    try {
      if (!KEK_ID_PATTERN.test(id))
        throw configError(`key-encryption key id ${quoteId(id)} must match ${KEK_ID_PATTERN}`);
      if (this.#keys.has(id)) throw configError(`key-encryption key id ${quoteId(id)} appears twice`);
      if (key.length !== KEK_BYTES)
        throw configError(`key-encryption key ${quoteId(id)} is ${key.length} bytes, expected ${KEK_BYTES} (AES-256)`);
      this.#keys.set(id, createSecretKey(key)); // copies into native memory; the buffer is zeroed below
    } finally {
      key.fill(0);
    }
  }

  /** Makes `id` the key new data keys are wrapped with. */
  activate(id: string): void {
    if (!this.#keys.has(id)) throw configError(`cannot activate key-encryption key ${quoteId(id)}: not in the keyring`);
    this.#activeKeyId = id;
  }

  /** Drops a retired KEK. Check with `referencedKeyIds` first that no envelope still needs it. */
  remove(id: string): void {
    if (id === this.#activeKeyId) throw configError(`cannot remove the active key-encryption key ${quoteId(id)}`);
    this.#keys.delete(id);
  }

  /** @internal for LocalKeyWrapper: the KEK of `id`, or undefined. */
  keyObject(id: string): KeyObject | undefined {
    return this.#keys.get(id);
  }

  toJSON(): unknown {
    return { activeKeyId: this.#activeKeyId, keyIds: this.ids() };
  }

  [inspect.custom](): string {
    return `Keyring { activeKeyId: ${JSON.stringify(this.#activeKeyId)}, keyIds: [${this.ids()
      .map((i) => JSON.stringify(i))
      .join(', ')}] }`;
  }

  /** A fresh random 32-byte KEK, e.g. for `ensureKeyringFile` or an ops tool. */
  static generateKey(): Buffer {
    return randomBytes(KEK_BYTES);
  }

  /**
   * Parses the environment form: `keks` = `id:<base64 32 bytes>[,id:<base64>...]`, `activeKeyId` names one
   * of them (may be omitted when there is exactly one key). `names` are the variable names used in messages.
   */
  static fromEnvValue(
    keks: string,
    activeKeyId: string | undefined,
    names: { keks: string; active: string } = { keks: 'HCP_SECRETS_KEKS', active: 'HCP_SECRETS_ACTIVE_KEK' },
  ): Keyring {
    const entries = keks
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e.length > 0);
    if (entries.length === 0)
      throw configError(`${names.keks} is empty: expected id:<base64 of ${KEK_BYTES} bytes>[,id:<base64>...]`);
    const keys: Array<[string, Buffer]> = [];
    try {
      entries.forEach((entry, index) => {
        const colon = entry.indexOf(':');
        if (colon <= 0) throw configError(`${names.keks} entry ${index + 1} is not of the form id:<base64 key>`);
        const id = entry.slice(0, colon).trim();
        if (!KEK_ID_PATTERN.test(id))
          throw configError(`${names.keks} entry ${index + 1} has ${quoteId(id)}; ids must match ${KEK_ID_PATTERN}`);
        if (keys.some(([known]) => known === id)) throw configError(`${names.keks} names key id ${quoteId(id)} twice`);
        const key = decodeBase64Strict(entry.slice(colon + 1).trim(), `${names.keks} key ${quoteId(id)}`, 'CONFIG');
        if (key.length !== KEK_BYTES) {
          key.fill(0);
          throw configError(
            `${names.keks} key ${quoteId(id)} decodes to ${key.length} bytes, expected ${KEK_BYTES} (AES-256)`,
          );
        }
        keys.push([id, key]);
      });
      const active = activeKeyId?.trim() || undefined;
      if (active === undefined && keys.length > 1) {
        throw configError(
          `${names.keks} holds ${keys.length} keys; set ${names.active} to the id new secrets are wrapped with (one of ${keys.map(([id]) => id).join(', ')})`,
        );
      }
      const activeId = active ?? keys[0][0];
      if (!keys.some(([id]) => id === activeId)) {
        throw configError(
          `${names.active}=${quoteId(activeId)} names no key in ${names.keks} (known ids: ${keys.map(([id]) => id).join(', ')})`,
        );
      }
      return new Keyring(activeId, keys);
    } finally {
      for (const [, key] of keys) key.fill(0);
    }
  }

  /**
   * Parses the file form, `{ "activeKeyId": "k2", "keys": { "k1": "<base64>", "k2": "<base64>" } }`.
   * `source` names the file in messages.
   */
  static fromJson(json: unknown, source: string, activeOverride?: string): Keyring {
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw configError(`${source}: expected a JSON object { "activeKeyId": ..., "keys": { id: base64 } }`);
    const { activeKeyId, keys } = json as { activeKeyId?: unknown; keys?: unknown };
    if (typeof keys !== 'object' || keys === null || Array.isArray(keys) || Object.keys(keys).length === 0) {
      throw configError(`${source}: "keys" must be a non-empty object of id -> base64 of ${KEK_BYTES} bytes`);
    }
    const entries: Array<[string, Buffer]> = [];
    try {
      for (const [id, value] of Object.entries(keys as Record<string, unknown>)) {
        if (!KEK_ID_PATTERN.test(id))
          throw configError(`${source}: key id ${quoteId(id)} must match ${KEK_ID_PATTERN}`);
        const key = decodeBase64Strict(value, `${source}: key ${quoteId(id)}`, 'CONFIG');
        if (key.length !== KEK_BYTES) {
          key.fill(0);
          throw configError(
            `${source}: key ${quoteId(id)} decodes to ${key.length} bytes, expected ${KEK_BYTES} (AES-256)`,
          );
        }
        entries.push([id, key]);
      }
      const active = activeOverride?.trim() || (typeof activeKeyId === 'string' ? activeKeyId : undefined);
      if (active === undefined) {
        if (entries.length !== 1)
          throw configError(`${source}: "activeKeyId" is required when the file holds more than one key`);
        return new Keyring(entries[0][0], entries);
      }
      if (!entries.some(([id]) => id === active)) {
        throw configError(
          `${source}: active key id ${quoteId(active)} names no key in the file (known ids: ${entries.map(([id]) => id).join(', ')})`,
        );
      }
      return new Keyring(active, entries);
    } finally {
      for (const [, key] of entries) key.fill(0);
    }
  }

  /**
   * Reads a JSON keyring file. The file must be a regular file that neither group nor others can read or
   * write (mode 0600 or 0400): a KEK readable by other accounts on the host is refused, not warned about.
   * The mode is checked on the opened descriptor, so the file read is the file checked.
   */
  static fromFile(file: string, activeOverride?: string): Keyring {
    const resolved = path.resolve(file);
    const text = readPrivateFile(resolved, 'key-encryption keyring');
    let json: unknown;
    try {
      json = JSON.parse(text.toString('utf8'));
    } catch {
      // JSON.parse messages quote the input: they would print key material.
      throw configError(`key-encryption keyring ${resolved} is not valid JSON`);
    } finally {
      text.fill(0);
    }
    return Keyring.fromJson(json, `key-encryption keyring ${resolved}`, activeOverride);
  }
}

/**
 * Reads a file that holds secret material after checking, on the opened descriptor, that it is a regular
 * file without group or other permission bits. The caller zeroes the returned buffer.
 */
export function readPrivateFile(file: string, what: string): Buffer {
  const resolved = path.resolve(file);
  let fd: number;
  try {
    fd = fs.openSync(resolved, fs.constants.O_RDONLY);
  } catch (error) {
    throw configError(`cannot open ${what} ${resolved} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw configError(`${what} ${resolved} is not a regular file`);
    assertPrivateMode(resolved, stat.mode, what);
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Refuses group or world access bits. POSIX only: on Windows the mode bits say nothing. */
export function assertPrivateMode(
  file: string,
  mode: number,
  what = 'key-encryption keyring',
  platform: NodeJS.Platform = process.platform,
): void {
  if (platform === 'win32') return;
  if ((mode & 0o077) !== 0) {
    const shown = (mode & 0o777).toString(8).padStart(4, '0');
    throw configError(
      `${what} ${file} has mode ${shown}, so group or other users can access it; ` +
        `it must be readable by the HCP user only: chmod 600 ${file} (or 400)`,
    );
  }
}

/**
 * Creates a keyring file with one fresh KEK when none exists (the embedded default's zero-configuration
 * start), created with mode 0600 atomically (`wx`), and returns the keyring read back from it.
 * An existing file is read, never overwritten.
 */
export function ensureKeyringFile(file: string, keyId = 'local-1'): Keyring {
  const resolved = path.resolve(file);
  if (!fs.existsSync(resolved)) {
    fs.mkdirSync(path.dirname(resolved), { recursive: true, mode: 0o700 });
    const key = Keyring.generateKey();
    const body = Buffer.from(
      `${JSON.stringify({ activeKeyId: keyId, keys: { [keyId]: encodeBase64(key) } }, null, 2)}\n`,
      'utf8',
    );
    key.fill(0);
    let fd: number | undefined;
    try {
      fd = fs.openSync(resolved, 'wx', 0o600);
      fs.writeSync(fd, body);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw configError(
          `cannot create key-encryption keyring ${resolved} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        );
    } finally {
      body.fill(0);
      if (fd !== undefined) fs.closeSync(fd);
    }
  }
  return Keyring.fromFile(resolved);
}
