import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { inspect } from 'node:util';
import { SecretsError } from './errors';
import { assertPrivateMode, ensureKeyringFile, Keyring } from './keyring';
import { errorText, kek } from './spec-support.spec';

const posix = process.platform !== 'win32';
const posixIt = posix ? it : it.skip;

describe('Keyring from the environment form', () => {
  it('parses id:base64 pairs and the active id', () => {
    const k1 = kek();
    const k2 = kek();
    const ring = Keyring.fromEnvValue(` k1:${k1.b64} , k2:${k2.b64} `, 'k2');
    expect(ring.ids()).toEqual(['k1', 'k2']);
    expect(ring.activeKeyId).toBe('k2');
  });

  it('takes the only key as active when no active id is given', () => {
    expect(Keyring.fromEnvValue(`only:${kek().b64}`, undefined).activeKeyId).toBe('only');
  });

  const k = kek();
  const cases: Array<[string, string, string | undefined, RegExp]> = [
    ['empty value', ' , ', undefined, /HCP_SECRETS_KEKS is empty/],
    ['entry without id', k.b64, undefined, /entry 1 is not of the form id:<base64 key>/],
    [
      'bad base64',
      `k1:${k.b64.slice(0, 20)}!!${k.b64.slice(22)}`,
      undefined,
      /HCP_SECRETS_KEKS key "k1" is not valid base64/,
    ],
    ['url-safe alphabet', `k1:${'-'.repeat(43)}=`, undefined, /not valid base64/],
    [
      'wrong key length (16 bytes)',
      `k1:${kek().raw.subarray(0, 16).toString('base64')}`,
      undefined,
      /key "k1" decodes to 16 bytes, expected 32/,
    ],
    [
      'wrong key length (33 bytes)',
      `k1:${Buffer.concat([kek().raw, Buffer.from([1])]).toString('base64')}`,
      undefined,
      /decodes to 33 bytes, expected 32/,
    ],
    [
      'active id missing',
      `k1:${kek().b64},k2:${kek().b64}`,
      'k3',
      /HCP_SECRETS_ACTIVE_KEK="k3" names no key in HCP_SECRETS_KEKS \(known ids: k1, k2\)/,
    ],
    [
      'several keys without an active id',
      `k1:${kek().b64},k2:${kek().b64}`,
      undefined,
      /holds 2 keys; set HCP_SECRETS_ACTIVE_KEK/,
    ],
    ['duplicate id', `k1:${kek().b64},k1:${kek().b64}`, 'k1', /names key id "k1" twice/],
    ['invalid id', `bad id!:${kek().b64}`, undefined, /entry 1 has \(an invalid id, not shown\)/],
  ];
  it.each(cases)('%s gives a clear CONFIG error', (_name, keks, active, message) => {
    const error = (() => {
      try {
        Keyring.fromEnvValue(keks, active);
      } catch (e) {
        return e as SecretsError;
      }
      throw new Error('expected a failure');
    })();
    expect(error).toBeInstanceOf(SecretsError);
    expect(error.code).toBe('CONFIG');
    expect(error.message).toMatch(message);
  });

  it('never quotes key material, even when a key is pasted where an id or the active id belongs', () => {
    const k1 = kek();
    const attempts: Array<() => unknown> = [
      () => Keyring.fromEnvValue(`${k1.b64}:k1`, undefined), // swapped
      () => Keyring.fromEnvValue(`k1:${k1.b64}`, k1.b64), // key as active id
      () => Keyring.fromEnvValue(`k1:${k1.b64.slice(0, 30)}`, undefined), // truncated key
      () => Keyring.fromEnvValue(`k1:${k1.b64}x`, undefined),
      () => Keyring.fromEnvValue(`k1:${k1.raw.toString('hex')}`, undefined), // hex instead of base64
    ];
    for (const attempt of attempts) {
      let error: Error | undefined;
      try {
        attempt();
      } catch (e) {
        error = e as Error;
      }
      expect(error).toBeInstanceOf(SecretsError);
      const text = errorText(error as Error);
      expect(text).not.toContain(k1.b64.slice(0, 16));
      expect(text).not.toContain(k1.raw.toString('hex').slice(0, 16));
    }
  });
});

describe('Keyring changes at run time', () => {
  it('adds, activates and removes keys; refuses to remove the active one or to activate an unknown one', () => {
    const ring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    ring.add('k2', kek().raw);
    expect(() => ring.activate('nope')).toThrow(/cannot activate key-encryption key "nope"/);
    ring.activate('k2');
    expect(() => ring.remove('k2')).toThrow(/cannot remove the active key-encryption key "k2"/);
    ring.remove('k1');
    expect(ring.ids()).toEqual(['k2']);
  });

  it('zeroes the buffer it was given', () => {
    const ring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    const raw = kek().raw;
    ring.add('k2', raw);
    expect(raw.every((b) => b === 0)).toBe(true);
  });

  it('refuses keys of the wrong length and duplicate ids', () => {
    const ring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    expect(() => ring.add('k2', Buffer.alloc(31, 1))).toThrow(/is 31 bytes, expected 32/);
    expect(() => ring.add('k1', kek().raw)).toThrow(/appears twice/);
  });

  it('shows ids but no key material through JSON, util.inspect or a logger walking it', () => {
    const k1 = kek();
    const ring = Keyring.fromEnvValue(`k1:${k1.b64}`, undefined);
    const shown = `${JSON.stringify(ring)} ${inspect(ring, { depth: 10, showHidden: true })} ${JSON.stringify({ ...ring })}`;
    expect(shown).toContain('k1');
    expect(shown).not.toContain(k1.b64);
    expect(shown).not.toContain(k1.raw.toString('hex'));
  });
});

describe('Keyring from a file', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hcp-secrets-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, content: string, mode: number): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, content, { mode });
    fs.chmodSync(file, mode);
    return file;
  };

  it('reads a 0600 (or 0400) JSON keyring', () => {
    const body = JSON.stringify({ activeKeyId: 'k2', keys: { k1: kek().b64, k2: kek().b64 } });
    expect(Keyring.fromFile(write('a.json', body, 0o600)).activeKeyId).toBe('k2');
    expect(Keyring.fromFile(write('b.json', body, 0o400)).ids()).toEqual(['k1', 'k2']);
  });

  it("lets HCP_SECRETS_ACTIVE_KEK override the file's active id", () => {
    const body = JSON.stringify({ activeKeyId: 'k1', keys: { k1: kek().b64, k2: kek().b64 } });
    expect(Keyring.fromFile(write('a.json', body, 0o600), 'k2').activeKeyId).toBe('k2');
  });

  posixIt.each([0o644, 0o640, 0o604, 0o660, 0o606, 0o700 | 0o010])(
    'refuses mode %o: group or others have access',
    (mode) => {
      const file = write('k.json', JSON.stringify({ activeKeyId: 'k1', keys: { k1: kek().b64 } }), mode);
      let error: SecretsError | undefined;
      try {
        Keyring.fromFile(file);
      } catch (e) {
        error = e as SecretsError;
      }
      expect(error?.code).toBe('CONFIG');
      expect(error?.message).toContain(`key-encryption keyring ${file} has mode 0${(mode & 0o777).toString(8)}`);
      expect(error?.message).toContain(`chmod 600 ${file}`);
    },
  );

  it('does not check modes on Windows, where they mean nothing', () => {
    expect(() => assertPrivateMode('x', 0o100666, 'keyring', 'win32')).not.toThrow();
    expect(() => assertPrivateMode('x', 0o100666, 'keyring', 'linux')).toThrow(/has mode 0666/);
  });

  it('refuses a missing file, a folder, and JSON that is not a keyring, without quoting the content', () => {
    const k1 = kek();
    expect(() => Keyring.fromFile(path.join(dir, 'missing.json'))).toThrow(
      /cannot open key-encryption keyring .*missing.json \(ENOENT\)/,
    );
    fs.mkdirSync(path.join(dir, 'folder'), { mode: 0o700 });
    expect(() => Keyring.fromFile(path.join(dir, 'folder'))).toThrow(/is not a regular file/);
    const broken = write('broken.json', `{"keys": {"k1": "${k1.b64}" oops`, 0o600);
    const brokenError = (() => {
      try {
        Keyring.fromFile(broken);
      } catch (e) {
        return e as Error;
      }
      throw new Error('expected a failure');
    })();
    expect(brokenError.message).toMatch(/is not valid JSON$/);
    expect(errorText(brokenError)).not.toContain(k1.b64);
    expect(() => Keyring.fromFile(write('arr.json', '[]', 0o600))).toThrow(/expected a JSON object/);
    expect(() => Keyring.fromFile(write('nokeys.json', '{"activeKeyId":"k1","keys":{}}', 0o600))).toThrow(
      /"keys" must be a non-empty object/,
    );
    expect(() =>
      Keyring.fromFile(
        write('short.json', JSON.stringify({ keys: { k1: k1.raw.subarray(0, 24).toString('base64') } }), 0o600),
      ),
    ).toThrow(/key "k1" decodes to 24 bytes, expected 32/);
    expect(() =>
      Keyring.fromFile(write('two.json', JSON.stringify({ keys: { k1: kek().b64, k2: kek().b64 } }), 0o600)),
    ).toThrow(/"activeKeyId" is required/);
    expect(() =>
      Keyring.fromFile(write('act.json', JSON.stringify({ activeKeyId: 'k9', keys: { k1: kek().b64 } }), 0o600)),
    ).toThrow(/active key id "k9" names no key in the file \(known ids: k1\)/);
  });

  it('ensureKeyringFile creates a 0600 keyring once and reads the same key afterwards', async () => {
    const file = path.join(dir, 'data', 'secrets-keyring.json');
    const first = ensureKeyringFile(file);
    if (posix) expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const before = fs.readFileSync(file, 'utf8');
    const second = ensureKeyringFile(file);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(second.ids()).toEqual(first.ids());
    // Same key material: what one wraps, the other unwraps.
    const { LocalKeyWrapper } = await import('./local-key-wrapper');
    const dataKey = Buffer.alloc(32, 7);
    const wrapped = await new LocalKeyWrapper(first).wrap(dataKey);
    expect((await new LocalKeyWrapper(second).unwrap(wrapped)).equals(dataKey)).toBe(true);
  });
});
