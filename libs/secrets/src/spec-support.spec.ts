// Helpers shared by the secrets specs. Named *.spec.ts so the build (which excludes specs) leaves it out;
// its own few tests check the helpers.
import { randomBytes } from 'node:crypto';
import { KeyWrapper, WrappedKey } from './key-wrapper';

/** A string that must never show up in an error message, a log line or a serialised object. */
export const MARKER = 'MARKER-hcp-secret-7f3a9c';

export function kek(): { raw: Buffer; b64: string } {
  const raw = randomBytes(32);
  return { raw, b64: raw.toString('base64') };
}

/** Wraps a KeyWrapper and keeps every data-key buffer that crossed it, to check they get zeroed. */
export class RecordingWrapper implements KeyWrapper {
  readonly wrapped: Buffer[] = [];
  readonly unwrapped: Buffer[] = [];
  constructor(private readonly inner: KeyWrapper) {}
  get id(): string {
    return this.inner.id;
  }
  async wrap(dataKey: Buffer): Promise<WrappedKey> {
    this.wrapped.push(dataKey);
    return this.inner.wrap(dataKey);
  }
  async unwrap(wrapped: WrappedKey): Promise<Buffer> {
    const key = await this.inner.unwrap(wrapped);
    this.unwrapped.push(key);
    return key;
  }
  isCurrent(wrapped: WrappedKey): boolean {
    return this.inner.isCurrent?.(wrapped) ?? false;
  }
}

/** Runs `fn`, expects it to reject, and returns the error. */
export async function failure(fn: () => Promise<unknown> | unknown): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

/** Everything an error could reveal when logged: message, stack, enumerable fields. */
export function errorText(error: Error): string {
  return `${error.message}\n${error.stack ?? ''}\n${JSON.stringify(error)}`;
}

describe('secrets spec support', () => {
  it('failure() returns the rejection and fails when there is none', async () => {
    expect((await failure(() => Promise.reject(new Error('x')))).message).toBe('x');
    await expect(failure(() => 1)).rejects.toThrow('expected a failure');
  });

  it('kek() gives 32 random bytes with their base64', () => {
    const k = kek();
    expect(k.raw).toHaveLength(32);
    expect(Buffer.from(k.b64, 'base64').equals(k.raw)).toBe(true);
  });
});
