import { SecretsError } from './errors';
import { parseSealedSecret, SealedSecret } from './sealed-secret';
import { SecretBox } from './secret-box';

export interface RotationRow {
  id: string;
  sealed: unknown;
}

/**
 * Persists a re-wrapped envelope. `previous` is the envelope that was read, so the store can write
 * conditionally (`UPDATE ... WHERE id = $1 AND sealed = $previous`) and not overwrite a credential that
 * was replaced while the rotation ran; a store that does so may return `false` to count the row as skipped.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a store that returns nothing has saved the row; only `false` skips it
export type RotationSave = (id: string, sealed: SealedSecret, previous: SealedSecret) => Promise<void | boolean>;

export interface RotationOptions {
  /** Rows re-wrapped at once (each is one wrapper call, e.g. one Vault request). Default 8. */
  concurrency?: number;
  /** Stop at the first failure instead of counting it and going on. Default false. */
  stopOnError?: boolean;
}

export interface RotationFailure {
  id: string;
  code: string;
  message: string;
}

export interface RotationResult {
  /** Rows read from the source. */
  scanned: number;
  /** Rows whose data key was re-wrapped under the active KEK and saved. */
  rewrapped: number;
  /** Rows already on the active KEK (nothing written). */
  alreadyCurrent: number;
  /** Rows the store declined to overwrite (changed concurrently). */
  skipped: number;
  failed: RotationFailure[];
}

/** Which KEKs envelopes still need, as `wrapper:keyId` (plus `@vN` for versioned KEKs), with counts. */
export interface KeyUsage {
  wrapper: string;
  keyId: string;
  keyVersion?: number;
  count: number;
}

/**
 * Key rotation over stored envelopes. The procedure, with no downtime:
 *  1. add the new KEK to every process's keyring, still inactive (all processes can now unwrap with it);
 *  2. make it active (new secrets are wrapped with it; both KEKs unwrap);
 *  3. `rotateAll` over every stored envelope, in batches from the store;
 *  4. `referencedKeyIds` over the store: once the old KEK is no longer listed, remove it.
 * Readers keep opening secrets throughout: every envelope names its KEK and both stay in the keyring
 * until step 4.
 */
export class KeyRotation {
  constructor(private readonly box: SecretBox) {}

  async rotateAll(
    source: AsyncIterable<RotationRow> | Iterable<RotationRow>,
    save: RotationSave,
    options: RotationOptions = {},
  ): Promise<RotationResult> {
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 8));
    const result: RotationResult = { scanned: 0, rewrapped: 0, alreadyCurrent: 0, skipped: 0, failed: [] };
    const running = new Set<Promise<void>>();
    let stopped: unknown;

    const rotateOne = async (row: RotationRow): Promise<void> => {
      try {
        const previous = parseSealedSecret(row.sealed);
        if (this.box.isCurrent(previous)) {
          result.alreadyCurrent++;
          return;
        }
        const next = await this.box.rewrap(previous);
        if (sameKek(previous, next)) {
          // Re-wrapped under the KEK (and version) it already had, e.g. Vault with no newer key version.
          result.alreadyCurrent++;
          return;
        }
        const saved = await save(row.id, next, previous);
        if (saved === false) result.skipped++;
        else result.rewrapped++;
      } catch (error) {
        const failure: RotationFailure = {
          id: row.id,
          code: error instanceof SecretsError ? error.code : 'ERROR',
          message: error instanceof SecretsError ? error.message : 'saving or re-wrapping failed',
        };
        result.failed.push(failure);
        if (options.stopOnError && stopped === undefined) stopped = error;
      }
    };

    try {
      for await (const row of source as AsyncIterable<RotationRow>) {
        if (stopped !== undefined) break;
        result.scanned++;
        const task = rotateOne(row).finally(() => running.delete(task));
        running.add(task);
        if (running.size >= concurrency) await Promise.race(running);
      }
    } finally {
      // Also when reading the source fails: let the rows in flight finish before the error surfaces.
      await Promise.all(running);
    }
    return result;
  }
}

function sameKek(a: SealedSecret, b: SealedSecret): boolean {
  return a.key.wrapper === b.key.wrapper && a.key.keyId === b.key.keyId && a.key.keyVersion === b.key.keyVersion;
}

/** KEK usage across envelopes, sorted; what must stay in the keyring. */
export function keyUsage(sealed: Iterable<unknown>): KeyUsage[] {
  const counts = new Map<string, KeyUsage>();
  for (const value of sealed) {
    const s = parseSealedSecret(value);
    const label = kekLabel(s.key.wrapper, s.key.keyId, s.key.keyVersion);
    const entry = counts.get(label) ?? {
      wrapper: s.key.wrapper,
      keyId: s.key.keyId,
      ...(s.key.keyVersion !== undefined ? { keyVersion: s.key.keyVersion } : {}),
      count: 0,
    };
    entry.count++;
    counts.set(label, entry);
  }
  return [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, usage]) => usage);
}

/**
 * The KEK ids envelopes reference, sorted and unique (e.g. `['k1', 'k2']` for local keys). A KEK that is
 * not in this list over the whole store can be removed from the keyring.
 */
export function referencedKeyIds(sealed: Iterable<unknown>): string[] {
  return [...new Set(keyUsage(sealed).map((u) => u.keyId))].sort();
}

/** `referencedKeyIds` over a store read in batches. */
export async function scanReferencedKeyIds(source: AsyncIterable<unknown> | Iterable<unknown>): Promise<string[]> {
  const ids = new Set<string>();
  for await (const value of source as AsyncIterable<unknown>) {
    const sealed =
      value !== null && typeof value === 'object' && 'sealed' in value ? (value as RotationRow).sealed : value;
    ids.add(parseSealedSecret(sealed).key.keyId);
  }
  return [...ids].sort();
}

function kekLabel(wrapper: string, keyId: string, keyVersion: number | undefined): string {
  return `${wrapper}:${keyId}${keyVersion !== undefined ? `@v${keyVersion}` : ''}`;
}
