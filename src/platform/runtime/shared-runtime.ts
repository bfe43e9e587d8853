import { Logger } from '@nestjs/common';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { loadOrCreateDevSigningKey } from '@hcp/auth';
import { GENERATED_KEYRING_FILE, loadSecretsFromEnv } from '@hcp/secrets';
import { HcpConfig } from '../../config/hcp-config';
import { createDataSource } from '../persistence/data-source';
import { logAnalyzedTables, migrate } from '../persistence/migrate';
import { openEmbeddedDatabase } from './embedded-database';

/**
 * What several HCP processes on one data folder must share and must not each create: the embedded
 * PostgreSQL (one supervised server), the schema, the dev signing key and the generated keyring. Opened
 * once by the launcher before its children start; the children get `env` and open their own runtime
 * (pools, event store) against it.
 */
export interface SharedRuntime {
  /** Variables every child gets on top of the launcher's environment. */
  env: Record<string, string>;
  /** Connections the database server takes from ordinary roles (max_connections less the reserved ones). */
  connectionLimit: number;
  close(): Promise<void>;
}

export async function openSharedRuntime(config: HcpConfig): Promise<SharedRuntime> {
  const logger = new Logger('launcher');
  const env: Record<string, string> = {};
  let stopDatabase: () => Promise<void> = async () => undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const embedded = await openEmbeddedDatabase(config, logger);
    stopDatabase = () => embedded.stop();
    databaseUrl = embedded.connectionString;
    env.DATABASE_URL = databaseUrl;
    logger.log(`embedded PostgreSQL running in ${config.dataDir}`);
  }
  let connectionLimit: number;
  try {
    const dataSource = createDataSource(databaseUrl, { poolSize: 4, applicationName: 'hcp-launcher' });
    await dataSource.initialize();
    try {
      logAnalyzedTables(await migrate(dataSource), logger);
      connectionLimit = await serverConnectionLimit(dataSource);
    } finally {
      await dataSource.destroy();
    }
    if (config.auth.mode === 'dev') loadOrCreateDevSigningKey(config.dataDir);
    // A child given DATABASE_URL would no longer generate the data folder's keyring (that is for one
    // process on its own folder): name the file, created here once, so all of them seal with the same KEK.
    const keyringConfigured = ['HCP_SECRETS_KEKS', 'HCP_SECRETS_KEK_FILE'].some((v) => process.env[v]?.trim());
    const local = (process.env.HCP_SECRETS_WRAPPER?.trim() || 'local') === 'local';
    if (local && !keyringConfigured && (!config.databaseUrl || config.auth.mode === 'dev')) {
      loadSecretsFromEnv(process.env, { generatedKeyringDir: config.dataDir });
      env.HCP_SECRETS_KEK_FILE = path.join(config.dataDir, GENERATED_KEYRING_FILE);
    }
  } catch (err) {
    await stopDatabase();
    throw err;
  }
  return { env, connectionLimit, close: stopDatabase };
}

async function serverConnectionLimit(dataSource: DataSource): Promise<number> {
  const [row] = await dataSource.query(
    `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int AS n`,
  );
  const n = Number(row?.n);
  if (!Number.isInteger(n) || n < 1) throw new Error(`the database reported no usable connection limit (${row?.n})`);
  return n;
}
