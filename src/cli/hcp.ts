/**
 * Operator commands that run beside HCP against its database:
 *   npm run hcp -- secrets rotate     re-wrap every provider credential with the active KEK
 */
import { loadSecretsFromEnv } from '@hcp/secrets';
import { ConfigError, HcpConfig, loadConfig } from '../config/hcp-config';
import { ProviderCredentialsStore } from '../ops/provider-credentials.store';
import { createDataSource } from '../persistence/data-source';
import { startEmbeddedPostgres } from '../persistence/embedded-postgres';

const USAGE = 'usage: npm run hcp -- secrets rotate';

async function main(argv: string[]): Promise<number> {
  let config: HcpConfig;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const [group, command] = argv;
  if (group === 'secrets' && command === 'rotate') return rotateSecrets(config);
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

async function rotateSecrets(config: HcpConfig): Promise<number> {
  const embedded = config.databaseUrl ? null : await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort });
  const db = createDataSource(config.databaseUrl ?? embedded!.connectionString, { poolSize: 2, applicationName: 'hcp-cli' });
  await db.initialize();
  try {
    const secrets = loadSecretsFromEnv(process.env, config.databaseUrl && config.auth.mode !== 'dev' ? {} : { generatedKeyringDir: config.dataDir });
    const result = await new ProviderCredentialsStore(db, secrets.box).rotate();
    process.stdout.write(`${JSON.stringify({ ...result, kek: secrets.summary })}\n`);
    return result.failed.length === 0 ? 0 : 1;
  } finally {
    await db.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
