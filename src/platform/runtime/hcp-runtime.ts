import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { createPublicKey } from 'node:crypto';
import { exportJWK } from 'jose';
import { KeySource, loadOrCreateDevSigningKey, TokenVerifier } from '@hcp/auth';
import { createHcpUpcasters } from '@hcp/domain';
import { DomainEventCodec, EventStore, openEventStoreDb, PostgresEventStore } from '@hcp/eventstore';
import { loadSecretsFromEnv, SecretBox } from '@hcp/secrets';
import { HcpConfig } from '../../config/hcp-config';
import { createDataSource } from '../persistence/data-source';
import { survivePoolConnectionLoss } from '../persistence/lost-connections';
import { logAnalyzedTables, migrate } from '../persistence/migrate';
import { openEmbeddedDatabase } from './embedded-database';

/** A request waiting on a database that is down fails after this instead of hanging on the pool. */
export const EVENT_STORE_CONNECTION_TIMEOUT_MS = 5000;

/**
 * Everything HCP opens before Nest starts: the database (embedded when none is configured), the schema,
 * the event store, the token keys and the secrets box. Built once, closed once.
 */
export interface HcpRuntime {
  config: HcpConfig;
  dataSource: DataSource;
  /** Plain pg pool for the event store and LISTEN connections. */
  pool: Pool;
  eventStore: EventStore;
  codec: DomainEventCodec;
  tokenVerifier: TokenVerifier;
  secretBox: SecretBox;
  close(): Promise<void>;
}

export async function openRuntime(config: HcpConfig): Promise<HcpRuntime> {
  const logger = new Logger('runtime');
  const closers: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const closer of closers.reverse())
      await closer().catch((err) => logger.warn(`while closing: ${(err as Error).message}`));
  };
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const embedded = await openEmbeddedDatabase(config, logger);
      closers.push(() => embedded.stop());
      databaseUrl = embedded.connectionString;
      logger.log(`embedded PostgreSQL running in ${config.dataDir}`);
    }
    const dataSource = createDataSource(databaseUrl, { poolSize: config.dbPoolSize });
    await dataSource.initialize();
    closers.push(() => dataSource.destroy());
    const lost = (err: Error) => logger.warn(`database connection lost: ${err.message}`);
    survivePoolConnectionLoss((dataSource.driver as PostgresDriver).master as Pool, lost);
    logAnalyzedTables(await migrate(dataSource), logger);

    const pool = new Pool({
      connectionString: databaseUrl,
      max: config.dbPoolSize,
      application_name: 'hcp-events',
      connectionTimeoutMillis: EVENT_STORE_CONNECTION_TIMEOUT_MS,
    });
    // An idle connection dropped by the server (restart, failover) must not crash the process; the pool
    // replaces it on the next checkout.
    pool.on('error', lost);
    survivePoolConnectionLoss(pool, lost);
    closers.push(() => pool.end());
    const eventStore: EventStore = config.eventStoreConnectionString
      ? await openEventStoreDb({ connectionString: config.eventStoreConnectionString })
      : new PostgresEventStore({ pool });
    closers.push(() => eventStore.close());

    const tokenVerifier = new TokenVerifier({
      keys: await keySource(config),
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      clockSkewSeconds: config.auth.clockSkewSeconds,
      ...(config.auth.devHs256Secret ? { devHs256Secret: config.auth.devHs256Secret } : {}),
    });

    // A generated keyring is fine where one data folder serves everything (embedded or dev mode); a
    // deployment of several processes must configure shared KEKs, or they could not read each other's.
    const secrets = loadSecretsFromEnv(
      process.env,
      config.databaseUrl && config.auth.mode !== 'dev' ? {} : { generatedKeyringDir: config.dataDir },
    );
    logger.log(secrets.summary);

    return {
      config,
      dataSource,
      pool,
      eventStore,
      codec: new DomainEventCodec(createHcpUpcasters()),
      tokenVerifier,
      secretBox: secrets.box,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The gateway's JWKS in production; in dev mode, the data folder's own signing key as a one-key set. */
async function keySource(config: HcpConfig): Promise<KeySource> {
  const { auth } = config;
  if (auth.mode === 'jwks' && auth.jwksUrl) {
    return {
      kind: 'jwks_url',
      url: auth.jwksUrl,
      refreshCooldownMs: auth.jwksRefreshCooldownMs,
      cacheMaxAgeMs: 10 * 60_000,
      timeoutMs: 5000,
    };
  }
  if (auth.mode === 'jwks')
    return { kind: 'jwks_file', path: auth.jwksFile!, refreshCooldownMs: auth.jwksRefreshCooldownMs };
  const key = loadOrCreateDevSigningKey(config.dataDir);
  const jwk = await exportJWK(createPublicKey(key.publicKeyPem));
  return { kind: 'jwks', jwks: { keys: [{ ...jwk, kid: key.kid, alg: key.alg, use: 'sig' }] } };
}
