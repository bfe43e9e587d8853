import { inspect } from 'node:util';
import { SecretsError } from './errors';
import { Keyring } from './keyring';
import { LocalKeyWrapper } from './local-key-wrapper';
import { describeSecret, parseSealedSecret, SealedSecret } from './sealed-secret';
import { SecretBox } from './secret-box';
import { errorText, failure, kek, MARKER, RecordingWrapper } from './spec-support.spec';

const PROVIDER = 'provider:0b6f7c1e-8f55-4d5c-9f55-3b0e1c3a9d11';
const OTHER_PROVIDER = 'provider:9d0a1f2e-1111-4c2b-8e7d-2f1a3b4c5d6e';
const credentials = { username: 'root@pam', password: MARKER, tokenId: 'hcp' };

function setup(keks = `k1:${kek().b64}`, active?: string) {
  const keyring = Keyring.fromEnvValue(keks, active);
  const wrapper = new LocalKeyWrapper(keyring);
  return { keyring, wrapper, box: new SecretBox(wrapper, { now: () => new Date('2030-01-02T03:04:05.000Z') }) };
}

/** Flips one bit of a base64 field. */
function flip(b64: string, index = 0): string {
  const bytes = Buffer.from(b64, 'base64');
  bytes[index % bytes.length] ^= 0x01;
  return bytes.toString('base64');
}

/** Expects `fn` to fail with `code` and checks the error reveals nothing secret. */
async function expectSafeFailure(
  fn: () => Promise<unknown>,
  code: SecretsError['code'],
  message: RegExp,
  secrets: string[] = [],
): Promise<void> {
  const error = await failure(fn);
  expect(error).toBeInstanceOf(SecretsError);
  expect((error as SecretsError).code).toBe(code);
  expect(error.message).toMatch(message);
  const text = errorText(error);
  for (const secret of [
    MARKER,
    Buffer.from(MARKER).toString('base64'),
    Buffer.from(MARKER).toString('hex'),
    ...secrets,
  ])
    expect(text).not.toContain(secret);
}

describe('SecretBox seal and open', () => {
  it('round-trips an object and bytes', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    expect(await box.openJson(sealed, PROVIDER)).toEqual(credentials);
    const bytes = Buffer.from(`-----BEGIN KEY----- ${MARKER}`);
    const sealedBytes = await box.seal(bytes, PROVIDER);
    expect((await box.open(sealedBytes, PROVIDER)).equals(bytes)).toBe(true);
    expect(bytes.toString()).toContain(MARKER); // the caller's buffer is left alone
    const empty = await box.seal(Buffer.alloc(0), PROVIDER);
    expect(await box.open(empty, PROVIDER)).toHaveLength(0);
  });

  it('produces a versioned, JSON-serialisable envelope with nothing readable in it', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    expect(sealed).toMatchObject({
      v: 1,
      alg: 'AES-256-GCM',
      content: 'json',
      wrapper: 'local',
      key: { wrapper: 'local', keyId: 'k1' },
      createdAt: '2030-01-02T03:04:05.000Z',
    });
    expect(Buffer.from(sealed.nonce, 'base64')).toHaveLength(12);
    expect(Buffer.from(sealed.tag, 'base64')).toHaveLength(16);
    const json = JSON.stringify(sealed);
    expect(json).not.toContain(MARKER);
    expect(json).not.toContain(Buffer.from(MARKER).toString('base64').slice(0, 12));
    // As stored in and read back from a jsonb column, or kept as text.
    const reread = JSON.parse(json);
    expect(await box.openJson(reread, PROVIDER)).toEqual(credentials);
    expect(await box.openJson(json, PROVIDER)).toEqual(credentials);
  });

  it('uses a fresh data key and nonce for every secret', async () => {
    const { box } = setup();
    const a = await box.seal(credentials, PROVIDER);
    const b = await box.seal(credentials, PROVIDER);
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.key.ciphertext).not.toBe(b.key.ciphertext);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it('zeroes the data keys after seal and open', async () => {
    const { wrapper } = setup();
    const recording = new RecordingWrapper(wrapper);
    const box = new SecretBox(recording);
    const sealed = await box.seal(credentials, PROVIDER);
    await box.openJson(sealed, PROVIDER);
    await failure(() => box.open(sealed, OTHER_PROVIDER)); // and after a failed open
    expect(recording.wrapped).toHaveLength(1);
    expect(recording.unwrapped).toHaveLength(2);
    for (const key of [...recording.wrapped, ...recording.unwrapped]) {
      expect(key).toHaveLength(32);
      expect(key.every((b) => b === 0)).toBe(true);
    }
  });

  it('does not open under another AAD: a secret copied to another provider row fails', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    await expectSafeFailure(
      () => box.open(sealed, OTHER_PROVIDER),
      'AUTHENTICATION_FAILED',
      /cannot open sealed secret: authentication failed/,
    );
  });

  it.each<[string, (s: SealedSecret) => SealedSecret]>([
    ['ciphertext', (s) => ({ ...s, ciphertext: flip(s.ciphertext, 5) })],
    ['tag', (s) => ({ ...s, tag: flip(s.tag, 3) })],
    ['nonce', (s) => ({ ...s, nonce: flip(s.nonce, 7) })],
    ['content type (bytes instead of json)', (s) => ({ ...s, content: 'bytes' })],
    [
      'truncated ciphertext',
      (s) => ({ ...s, ciphertext: Buffer.from(s.ciphertext, 'base64').subarray(0, 10).toString('base64') }),
    ],
  ])('detects a tampered %s', async (_what, tamper) => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    await expectSafeFailure(() => box.open(tamper(sealed), PROVIDER), 'AUTHENTICATION_FAILED', /authentication failed/);
  });

  it('detects a tampered wrapped data key', async () => {
    const k1 = kek();
    const { box } = setup(`k1:${k1.b64}`);
    const sealed = await box.seal(credentials, PROVIDER);
    const tampered = { ...sealed, key: { ...sealed.key, ciphertext: flip(sealed.key.ciphertext, 20) } };
    await expectSafeFailure(
      () => box.open(tampered, PROVIDER),
      'AUTHENTICATION_FAILED',
      /cannot unwrap data key with key-encryption key "k1": authentication failed/,
      [k1.b64],
    );
  });

  it('names the missing KEK when the envelope was wrapped with a key the keyring lacks', async () => {
    const { box } = setup(`k1:${kek().b64}`);
    const other = setup(`k7:${kek().b64}`).box;
    const sealed = await other.seal(credentials, PROVIDER);
    await expectSafeFailure(
      () => box.open(sealed, PROVIDER),
      'UNKNOWN_KEY',
      /key-encryption key "k7", which is not in the keyring \(known ids: k1\)/,
    );
  });

  it('fails cleanly when the KEK id matches but its material differs, or the envelope is relabelled to another KEK', async () => {
    const k1 = kek();
    const k2 = kek();
    const writer = setup(`k1:${k1.b64}`).box;
    const reader = setup(`k1:${kek().b64}`).box;
    const sealed = await writer.seal(credentials, PROVIDER);
    await expectSafeFailure(
      () => reader.open(sealed, PROVIDER),
      'AUTHENTICATION_FAILED',
      /key-encryption key "k1": authentication failed/,
      [k1.b64],
    );
    const both = setup(`k1:${k1.b64},k2:${k2.b64}`, 'k1').box;
    const relabelled = { ...sealed, key: { ...sealed.key, keyId: 'k2' } };
    await expectSafeFailure(
      () => both.open(relabelled, PROVIDER),
      'AUTHENTICATION_FAILED',
      /"k2": authentication failed/,
      [k1.b64, k2.b64],
    );
  });

  it('refuses an unknown format version and malformed envelopes with field names, not contents', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    await expectSafeFailure(
      () => box.open({ ...sealed, v: 2 }, PROVIDER),
      'UNSUPPORTED_VERSION',
      /format version 2; this build reads version 1/,
    );
    const malformed: Array<[unknown, RegExp]> = [
      [null, /is not an object/],
      ['{not json', /is not valid JSON/],
      [{ ...sealed, v: undefined }, /has no format version/],
      [{ ...sealed, alg: 'AES-128-CBC' }, /unsupported algorithm/],
      [{ ...sealed, content: 'xml' }, /unknown "content"/],
      [{ ...sealed, wrapper: 'vault-transit' }, /different wrapper in "key.wrapper"/],
      [{ ...sealed, key: undefined }, /has no wrapped key/],
      [{ ...sealed, nonce: 'not base64!' }, /"nonce" is not valid base64/],
      [{ ...sealed, nonce: Buffer.alloc(8).toString('base64') }, /"nonce" is not 12 bytes/],
      [{ ...sealed, tag: Buffer.alloc(12).toString('base64') }, /"tag" is not 16 bytes/],
      [{ ...sealed, ciphertext: 42 }, /has no "ciphertext"/],
      [{ ...sealed, key: { ...sealed.key, keyVersion: -1 } }, /invalid "key.keyVersion"/],
    ];
    for (const [value, message] of malformed)
      await expectSafeFailure(() => box.open(value, PROVIDER), 'INVALID_ENVELOPE', message);
  });

  it('names an unconfigured wrapper', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    const foreign = { ...sealed, wrapper: 'aws-kms', key: { ...sealed.key, wrapper: 'aws-kms' } };
    await expectSafeFailure(
      () => box.open(foreign, PROVIDER),
      'UNKNOWN_KEY',
      /wrapped by "aws-kms", which this process is not configured for \(configured: local\)/,
    );
  });

  it('rejects bad input to seal with clear messages', async () => {
    const { box } = setup();
    await expectSafeFailure(() => box.seal(credentials, ''), 'INVALID_INPUT', /aad is required/);
    await expectSafeFailure(
      () => box.seal(MARKER as unknown as object, PROVIDER),
      'INVALID_INPUT',
      /must be a Buffer or an object/,
    );
    const cyclic: Record<string, unknown> = { password: MARKER };
    cyclic.self = cyclic;
    await expectSafeFailure(() => box.seal(cyclic, PROVIDER), 'INVALID_INPUT', /cannot be serialised as JSON/);
    await expectSafeFailure(
      () => box.seal({ password: MARKER, n: BigInt(1) }, PROVIDER),
      'INVALID_INPUT',
      /cannot be serialised as JSON/,
    );
    const small = new SecretBox(setup().wrapper, { maxPlaintextBytes: 16 });
    await expectSafeFailure(
      () => small.seal({ password: MARKER }, PROVIDER),
      'INVALID_INPUT',
      /at most 16 are accepted/,
    );
    const sealedBytes = await box.seal(Buffer.from(MARKER), PROVIDER);
    await expectSafeFailure(() => box.openJson(sealedBytes, PROVIDER), 'INVALID_INPUT', /holds bytes, not JSON/);
  });

  it('describes a secret for ops without anything secret', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    const description = describeSecret(sealed);
    expect(description).toEqual({
      format: 1,
      algorithm: 'AES-256-GCM',
      wrapper: 'local',
      keyId: 'k1',
      createdAt: '2030-01-02T03:04:05.000Z',
    });
    expect(JSON.stringify(description)).not.toContain(sealed.ciphertext);
    expect(JSON.stringify(description)).not.toContain(sealed.key.ciphertext);
  });

  it('parseSealedSecret returns a clean copy without unknown fields', async () => {
    const { box } = setup();
    const sealed = await box.seal(credentials, PROVIDER);
    const parsed = parseSealedSecret({ ...sealed, extra: MARKER });
    expect(JSON.stringify(parsed)).not.toContain(MARKER);
  });

  it('shows no key material when the box or its wrapper is logged', () => {
    const k1 = kek();
    const { box, wrapper } = setup(`k1:${k1.b64}`);
    const shown = [
      JSON.stringify(box),
      inspect(box, { depth: 10, showHidden: true }),
      JSON.stringify(wrapper),
      inspect(wrapper, { depth: 10, showHidden: true }),
    ].join(' ');
    expect(shown).toContain('k1');
    expect(shown).not.toContain(k1.b64);
  });
});
