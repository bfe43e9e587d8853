import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { createPublicKey } from 'node:crypto';
import { exportJWK } from 'jose';
import { KeySource, loadOrCreateDevSigningKey, TokenVerifier } from '@hcp/auth';
import { createHcpUpcasters } from '@hcp/domain';
import { DomainEventCodec, EventStore, EventStoreDbEventStore, PostgresEventStore } from '@hcp/eventstore';
import { SimulatorDriver, SimulatorFaults, SimulatorState, simulatorLatency } from '@hcp/providers';
import { LOCAL_CLUSTER_ID, LOCAL_PROVIDER_ID, seedLocalCatalog } from '../catalog/catalog-seed';
import { HcpConfig } from '../config/hcp-config';
import { createDataSource } from '../persistence/data-source';
import { startEmbeddedPostgres } from '../persistence/embedded-postgres';
import { migrate } from '../persistence/migrate';
import { DriverRegistry } from '../providers/driver-registry';

/**
 * Everything HCP opens before Nest starts: the database (embedded when none is configured), the schema,
 * the event store, the token keys and the provider drivers. Built once, closed once.
 */
export interface HcpRuntime {
  config: HcpConfig;
  dataSource: DataSource;
  /** Plain pg pool for the event store and LISTEN connections. */
  pool: Pool;
  eventStore: EventStore;
  codec: DomainEventCodec;
  tokenVerifier: TokenVerifier;
  drivers: DriverRegistry;
  close(): Promise<void>;
}

export async function openRuntime(config: HcpConfig): Promise<HcpRuntime> {
  const logger = new Logger('runtime');
  const closers: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch((err) => logger.warn(`while closing: ${(err as Error).message}`));
  };
  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort, logger });
      closers.push(() => embedded.stop());
      databaseUrl = embedded.connectionString;
      logger.log(`embedded PostgreSQL running in ${config.dataDir}`);
    }
    const dataSource = createDataSource(databaseUrl);
    await dataSource.initialize();
    closers.push(() => dataSource.destroy());
    await migrate(dataSource);

    const pool = new Pool({ connectionString: databaseUrl, max: 20, application_name: 'hcp-events' });
    closers.push(() => pool.end());
    const eventStore: EventStore = config.eventStoreConnectionString
      ? new EventStoreDbEventStore({ connectionString: config.eventStoreConnectionString })
      : new PostgresEventStore({ pool });
    closers.push(() => eventStore.close());

    const tokenVerifier = new TokenVerifier({
      keys: await keySource(config),
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      clockSkewSeconds: config.auth.clockSkewSeconds,
      ...(config.auth.devHs256Secret ? { devHs256Secret: config.auth.devHs256Secret } : {}),
    });

    const drivers = new DriverRegistry();
    const simulator = new SimulatorDriver({
      state: new SimulatorState(pool),
      latency: simulatorLatency({ scale: config.simulator.latencyScale }),
      faults: SimulatorFaults.parse(config.simulator.faults),
      clusterId: LOCAL_CLUSTER_ID,
      providerId: LOCAL_PROVIDER_ID,
    });
    drivers.register(LOCAL_PROVIDER_ID, simulator);
    closers.push(() => drivers.closeAll());
    if (config.seedCatalog) await seedLocalCatalog(dataSource, simulator.capabilities());

    return { config, dataSource, pool, eventStore, codec: new DomainEventCodec(createHcpUpcasters()), tokenVerifier, drivers, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The gateway's JWKS in production; in dev mode, the data folder's own signing key as a one-key set. */
async function keySource(config: HcpConfig): Promise<KeySource> {
  const { auth } = config;
  if (auth.mode === 'jwks' && auth.jwksUrl) {
    return { kind: 'jwks_url', url: auth.jwksUrl, refreshCooldownMs: auth.jwksRefreshCooldownMs, cacheMaxAgeMs: 10 * 60_000, timeoutMs: 5000 };
  }
  if (auth.mode === 'jwks') return { kind: 'jwks_file', path: auth.jwksFile!, refreshCooldownMs: auth.jwksRefreshCooldownMs };
  const key = loadOrCreateDevSigningKey(config.dataDir);
  const jwk = await exportJWK(createPublicKey(key.publicKeyPem));
  return { kind: 'jwks', jwks: { keys: [{ ...jwk, kid: key.kid, alg: key.alg, use: 'sig' }] } };
}
