import * as path from 'node:path';
import { SecretsError } from './errors';
import { KeyWrapper } from './key-wrapper';
import { ensureKeyringFile, Keyring, readPrivateFile } from './keyring';
import { LocalKeyWrapper } from './local-key-wrapper';
import { SecretBox } from './secret-box';
import { VaultTransitKeyWrapper } from './vault-transit-key-wrapper';

export type SecretsWrapperKind = 'local' | 'vault-transit';

/** The secrets variables, in the shape of the central CONFIG_VARIABLES table. */
export const SECRETS_CONFIG_VARIABLES: ReadonlyArray<{ name: string; default: string; description: string }> = [
  {
    name: 'HCP_SECRETS_WRAPPER',
    default: 'local',
    description:
      'wrapper of provider-credential data keys: local (KEKs from HCP_SECRETS_KEK_FILE or HCP_SECRETS_KEKS) or vault-transit',
  },
  {
    name: 'HCP_SECRETS_KEK_FILE',
    default: '',
    description:
      'JSON keyring {"activeKeyId":"k1","keys":{"k1":"<base64 of 32 bytes>"}}, mode 0600 or 0400; with neither this nor HCP_SECRETS_KEKS, HCP_DATA_DIR/secrets-keyring.json is created',
  },
  {
    name: 'HCP_SECRETS_KEKS',
    default: '',
    description: 'KEKs inline as id:<base64 of 32 bytes>[,id:<base64>...] (prefer HCP_SECRETS_KEK_FILE)',
  },
  {
    name: 'HCP_SECRETS_ACTIVE_KEK',
    default: '',
    description:
      "id of the KEK new secrets are wrapped with; required with more than one KEK, overrides the file's activeKeyId",
  },
  {
    name: 'HCP_SECRETS_VAULT_ADDR',
    default: '',
    description: 'Vault address for HCP_SECRETS_WRAPPER=vault-transit (https://; http:// only on loopback)',
  },
  {
    name: 'HCP_SECRETS_VAULT_TOKEN',
    default: '',
    description:
      'Vault token with update on <mount>/encrypt, decrypt and rewrap of the key (or HCP_SECRETS_VAULT_TOKEN_FILE)',
  },
  {
    name: 'HCP_SECRETS_VAULT_TOKEN_FILE',
    default: '',
    description: 'file holding the Vault token (mode 0600/0400), re-read on every call so an agent can renew it',
  },
  { name: 'HCP_SECRETS_VAULT_TRANSIT_MOUNT', default: 'transit', description: 'mount path of the transit engine' },
  {
    name: 'HCP_SECRETS_VAULT_TRANSIT_KEY',
    default: 'hcp-provider-credentials',
    description: 'transit key that wraps data keys',
  },
  { name: 'HCP_SECRETS_VAULT_NAMESPACE', default: '', description: 'Vault Enterprise namespace (X-Vault-Namespace)' },
];

export interface LoadedSecrets {
  box: SecretBox;
  /** The wrapper new secrets are wrapped with. */
  wrapper: KeyWrapper;
  /** Wrappers kept only to open and re-wrap older envelopes (the local keyring while moving to Vault). */
  readers: KeyWrapper[];
  /** One line for the start-up log: which wrapper, which KEK ids; never key material. */
  summary: string;
}

export interface LoadSecretsOptions {
  /**
   * Folder (HCP_DATA_DIR) where a keyring file is generated when no KEK is configured. Pass it only for the
   * embedded single-process default: processes that share a database must share their KEKs, and each would
   * otherwise generate its own. Without it, a missing KEK is a configuration error.
   */
  generatedKeyringDir?: string;
  /** For tests of the Vault wrapper. */
  fetch?: typeof fetch;
}

export const GENERATED_KEYRING_FILE = 'secrets-keyring.json';

/**
 * Builds the SecretBox from the environment. Errors are `SecretsError` with code CONFIG naming the
 * variable and never its value. With HCP_SECRETS_WRAPPER=vault-transit, a configured local keyring stays
 * as a reader, so envelopes sealed before the move still open and `KeyRotation` moves them to Vault.
 */
export function loadSecretsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  options: LoadSecretsOptions = {},
): LoadedSecrets {
  const value = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  const kind = value('HCP_SECRETS_WRAPPER') ?? 'local';
  if (kind !== 'local' && kind !== 'vault-transit') {
    throw new SecretsError(
      'CONFIG',
      `HCP_SECRETS_WRAPPER=${JSON.stringify(kind.slice(0, 40))}: expected local or vault-transit`,
    );
  }
  const keks = value('HCP_SECRETS_KEKS');
  const file = value('HCP_SECRETS_KEK_FILE');
  const active = value('HCP_SECRETS_ACTIVE_KEK');
  if (keks && file)
    throw new SecretsError(
      'CONFIG',
      'HCP_SECRETS_KEKS and HCP_SECRETS_KEK_FILE are both set: configure the local keyring in one place',
    );

  const localKeyring = (createDefault: boolean): Keyring | null => {
    if (keks) return Keyring.fromEnvValue(keks, active);
    if (file) return Keyring.fromFile(file, active);
    if (active)
      throw new SecretsError(
        'CONFIG',
        'HCP_SECRETS_ACTIVE_KEK is set but no keyring is: set HCP_SECRETS_KEK_FILE or HCP_SECRETS_KEKS',
      );
    if (!createDefault) return null;
    if (!options.generatedKeyringDir)
      throw new SecretsError(
        'CONFIG',
        'no key-encryption key configured: set HCP_SECRETS_KEK_FILE or HCP_SECRETS_KEKS',
      );
    return ensureKeyringFile(path.join(options.generatedKeyringDir, GENERATED_KEYRING_FILE));
  };

  if (kind === 'local') {
    const keyring = localKeyring(true) as Keyring;
    const wrapper = new LocalKeyWrapper(keyring);
    return {
      box: new SecretBox(wrapper),
      wrapper,
      readers: [],
      summary: `secrets: local keyring, active KEK ${keyring.activeKeyId} (ids: ${keyring.ids().join(', ')})`,
    };
  }

  const address = value('HCP_SECRETS_VAULT_ADDR');
  if (!address) throw new SecretsError('CONFIG', 'HCP_SECRETS_WRAPPER=vault-transit needs HCP_SECRETS_VAULT_ADDR');
  const tokenValue = value('HCP_SECRETS_VAULT_TOKEN');
  const tokenFile = value('HCP_SECRETS_VAULT_TOKEN_FILE');
  if (tokenValue && tokenFile)
    throw new SecretsError('CONFIG', 'HCP_SECRETS_VAULT_TOKEN and HCP_SECRETS_VAULT_TOKEN_FILE are both set: use one');
  if (!tokenValue && !tokenFile)
    throw new SecretsError(
      'CONFIG',
      'HCP_SECRETS_WRAPPER=vault-transit needs HCP_SECRETS_VAULT_TOKEN or HCP_SECRETS_VAULT_TOKEN_FILE',
    );
  const readToken = (): string => {
    const bytes = readPrivateFile(tokenFile as string, 'Vault token file');
    try {
      const token = bytes.toString('utf8').trim();
      if (!token) throw new SecretsError('CONFIG', `Vault token file ${path.resolve(tokenFile as string)} is empty`);
      return token;
    } finally {
      bytes.fill(0);
    }
  };
  if (tokenFile) readToken(); // fail at start, not on the first secret
  let wrapper: VaultTransitKeyWrapper;
  try {
    wrapper = new VaultTransitKeyWrapper({
      address,
      token: tokenValue ?? readToken,
      mount: value('HCP_SECRETS_VAULT_TRANSIT_MOUNT') ?? 'transit',
      keyName: value('HCP_SECRETS_VAULT_TRANSIT_KEY') ?? 'hcp-provider-credentials',
      namespace: value('HCP_SECRETS_VAULT_NAMESPACE'),
      fetch: options.fetch,
    });
  } catch (error) {
    if (error instanceof SecretsError) throw new SecretsError('CONFIG', `HCP_SECRETS_VAULT_*: ${error.message}`);
    throw error;
  }
  const legacy = localKeyring(false);
  const readers = legacy ? [new LocalKeyWrapper(legacy)] : [];
  return {
    box: new SecretBox(wrapper, { readers }),
    wrapper,
    readers,
    summary: `secrets: Vault transit key ${wrapper.keyId}${legacy ? `; local keyring kept for reading (ids: ${legacy.ids().join(', ')})` : ''}`,
  };
}
