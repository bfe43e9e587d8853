/**
 * A fresh Idempotency-Key (a UUID v4). Send the same key again when retrying the same request: HCP answers
 * the first answer again instead of starting a second job (docs/API.md).
 */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}
