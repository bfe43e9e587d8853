import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SecretsError } from './errors';
import { GENERATED_KEYRING_FILE, loadSecretsFromEnv, SECRETS_CONFIG_VARIABLES } from './secrets-config';
import { errorText, kek } from './spec-support.spec';
import { VaultTransitKeyWrapper } from './vault-transit-key-wrapper';

function configError(fn: () => unknown): SecretsError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    expect((error as SecretsError).code).toBe('CONFIG');
    return error as SecretsError;
  }
  throw new Error('expected a configuration error');
}

describe('loadSecretsFromEnv', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hcp-secrets-config-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('builds a local box from HCP_SECRETS_KEKS and HCP_SECRETS_ACTIVE_KEK, summarising ids only', async () => {
    const k1 = kek();
    const k2 = kek();
    const loaded = loadSecretsFromEnv({ HCP_SECRETS_KEKS: `k1:${k1.b64},k2:${k2.b64}`, HCP_SECRETS_ACTIVE_KEK: 'k2' });
    expect(loaded.wrapper.id).toBe('local');
    expect(loaded.summary).toBe('secrets: local keyring, active KEK k2 (ids: k1, k2)');
    const sealed = await loaded.box.seal({ a: 1 }, 'p1');
    expect(sealed.key.keyId).toBe('k2');
    expect(await loaded.box.openJson(sealed, 'p1')).toEqual({ a: 1 });
  });

  it('reads HCP_SECRETS_KEK_FILE', () => {
    const file = path.join(dir, 'keyring.json');
    fs.writeFileSync(file, JSON.stringify({ activeKeyId: 'k1', keys: { k1: kek().b64 } }), { mode: 0o600 });
    expect(loadSecretsFromEnv({ HCP_SECRETS_KEK_FILE: file }).summary).toContain('active KEK k1');
  });

  it('generates a keyring in the given folder only when asked (embedded default)', () => {
    expect(configError(() => loadSecretsFromEnv({})).message).toBe(
      'no key-encryption key configured: set HCP_SECRETS_KEK_FILE or HCP_SECRETS_KEKS',
    );
    const first = loadSecretsFromEnv({}, { generatedKeyringDir: dir });
    expect(fs.existsSync(path.join(dir, GENERATED_KEYRING_FILE))).toBe(true);
    expect(loadSecretsFromEnv({}, { generatedKeyringDir: dir }).summary).toBe(first.summary);
  });

  it('gives clear messages for contradictory or incomplete settings, never quoting values', () => {
    const k1 = kek();
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ HCP_SECRETS_WRAPPER: 'kms' }, /HCP_SECRETS_WRAPPER="kms": expected local or vault-transit/],
      [{ HCP_SECRETS_KEKS: `k1:${k1.b64}`, HCP_SECRETS_KEK_FILE: '/x' }, /are both set/],
      [{ HCP_SECRETS_ACTIVE_KEK: 'k1' }, /HCP_SECRETS_ACTIVE_KEK is set but no keyring is/],
      [{ HCP_SECRETS_KEKS: `k1:${k1.b64.slice(1)}` }, /HCP_SECRETS_KEKS key "k1" is not valid base64/],
      [{ HCP_SECRETS_KEKS: `k1:${k1.b64}`, HCP_SECRETS_ACTIVE_KEK: 'k2' }, /HCP_SECRETS_ACTIVE_KEK="k2" names no key/],
      [{ HCP_SECRETS_WRAPPER: 'vault-transit' }, /needs HCP_SECRETS_VAULT_ADDR/],
      [
        { HCP_SECRETS_WRAPPER: 'vault-transit', HCP_SECRETS_VAULT_ADDR: 'https://vault:8200' },
        /needs HCP_SECRETS_VAULT_TOKEN or HCP_SECRETS_VAULT_TOKEN_FILE/,
      ],
      [
        {
          HCP_SECRETS_WRAPPER: 'vault-transit',
          HCP_SECRETS_VAULT_ADDR: 'https://vault:8200',
          HCP_SECRETS_VAULT_TOKEN: 's.x',
          HCP_SECRETS_VAULT_TOKEN_FILE: '/t',
        },
        /use one/,
      ],
      [
        {
          HCP_SECRETS_WRAPPER: 'vault-transit',
          HCP_SECRETS_VAULT_ADDR: 'http://vault.internal:8200',
          HCP_SECRETS_VAULT_TOKEN: 'hvs.SECRET',
        },
        /HCP_SECRETS_VAULT_\*: .*plain http/,
      ],
      [
        {
          HCP_SECRETS_WRAPPER: 'vault-transit',
          HCP_SECRETS_VAULT_ADDR: 'https://vault:8200',
          HCP_SECRETS_VAULT_TOKEN: 'hvs.SECRET',
          HCP_SECRETS_VAULT_TRANSIT_KEY: '../sys',
        },
        /key name/,
      ],
    ];
    for (const [env, message] of cases) {
      const error = configError(() => loadSecretsFromEnv(env));
      expect(error.message).toMatch(message);
      expect(errorText(error)).not.toContain(k1.b64.slice(2, 20));
      expect(errorText(error)).not.toContain('hvs.SECRET');
    }
  });

  it('builds a Vault transit box and keeps a configured local keyring as a reader for the move', () => {
    const loaded = loadSecretsFromEnv({
      HCP_SECRETS_WRAPPER: 'vault-transit',
      HCP_SECRETS_VAULT_ADDR: 'https://vault.internal:8200',
      HCP_SECRETS_VAULT_TOKEN: 'hvs.SECRET',
      HCP_SECRETS_KEKS: `old:${kek().b64}`,
    });
    expect(loaded.wrapper).toBeInstanceOf(VaultTransitKeyWrapper);
    expect(loaded.readers.map((r) => r.id)).toEqual(['local']);
    expect(loaded.summary).toBe(
      'secrets: Vault transit key transit/hcp-provider-credentials; local keyring kept for reading (ids: old)',
    );
    expect(JSON.stringify(loaded.wrapper)).not.toContain('hvs.SECRET');
  });

  it('refuses a Vault token file others can read, and an empty one', () => {
    const file = path.join(dir, 'token');
    fs.writeFileSync(file, 'hvs.SECRET\n', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const env = {
      HCP_SECRETS_WRAPPER: 'vault-transit',
      HCP_SECRETS_VAULT_ADDR: 'https://vault:8200',
      HCP_SECRETS_VAULT_TOKEN_FILE: file,
    };
    if (process.platform !== 'win32')
      expect(configError(() => loadSecretsFromEnv(env)).message).toMatch(/Vault token file .* has mode 0644/);
    fs.chmodSync(file, 0o600);
    expect(loadSecretsFromEnv(env).wrapper.id).toBe('vault-transit');
    fs.writeFileSync(file, '  \n');
    expect(configError(() => loadSecretsFromEnv(env)).message).toMatch(/Vault token file .* is empty/);
  });

  it('documents every variable it reads', () => {
    const source = fs.readFileSync(path.join(__dirname, 'secrets-config.ts'), 'utf8');
    const read = new Set([...source.matchAll(/value\('([A-Z_]+)'\)/g)].map((m) => m[1]));
    expect([...read].sort()).toEqual(SECRETS_CONFIG_VARIABLES.map((v) => v.name).sort());
  });
});
