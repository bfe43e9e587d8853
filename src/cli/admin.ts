/**
 * Operator commands that run beside HCP against its database:
 *   npm run admin -- secrets rotate   re-wrap every provider credential with the active KEK
 *   npm run admin -- audit replay [--from <RFC 3339>] [--to <RFC 3339>] [--project <id>]
 *                                   the audit trail from the event store, as JSON lines
 *   npm run admin -- projections rebuild <name>
 *                                   rebuild a read model beside the live one, then swap
 *   npm run admin -- migrate status|up|down [--to <version>] [--output json]
 *                                   where the schema stands, apply or revert migrations
 */
import { readModelProjections, rebuildProjection, SILENT_SINKS } from '@hcp/projections';
import { DomainEventCodec, EventStore, openEventStoreDb, PostgresEventStore } from '@hcp/eventstore';
import { parseArgs } from 'node:util';
import { Pool } from 'pg';
import { createHcpUpcasters } from '@hcp/domain';
import { replayAudit } from '../audit';
import { loadSecretsFromEnv } from '@hcp/secrets';
import { ConfigError, HcpConfig, loadConfig } from '../config/hcp-config';
import { ProviderCredentialsStore } from '../ops';
import { createDataSource } from '../platform/persistence/data-source';
import { openCliDatabase } from './database';
import { runMigrateCommand } from './migrate-command';

const USAGE =
  'usage: npm run admin -- secrets rotate | audit replay [--from <time>] [--to <time>] [--project <id>] | projections rebuild <name> | migrate status|up|down [--to <version>] [--output json]';

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
  if (group === 'audit' && command === 'replay') return replay(config, argv.slice(2));
  if (group === 'projections' && command === 'rebuild' && argv[2]) return rebuild(config, argv[2]);
  if (group === 'migrate') return runMigrateCommand(config, argv.slice(1));
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

async function rotateSecrets(config: HcpConfig): Promise<number> {
  const database = await openCliDatabase(config);
  const db = createDataSource(database.url, {
    poolSize: 2,
    applicationName: 'hcp-admin',
  });
  try {
    await db.initialize();
    const secrets = loadSecretsFromEnv(
      process.env,
      config.databaseUrl && config.auth.mode !== 'dev' ? {} : { generatedKeyringDir: config.dataDir },
    );
    const result = await new ProviderCredentialsStore(db, secrets.box).rotate();
    process.stdout.write(`${JSON.stringify({ ...result, kek: secrets.summary })}\n`);
    return result.failed.length === 0 ? 0 : 1;
  } finally {
    if (db.isInitialized) await db.destroy();
    await database.close();
  }
}

async function rebuild(config: HcpConfig, name: string): Promise<number> {
  const projection = readModelProjections(SILENT_SINKS).find((p) => p.name === name);
  if (!projection) {
    process.stderr.write(
      `no read model named ${name}; read models: ${readModelProjections(SILENT_SINKS)
        .map((p) => p.name)
        .join(', ')}\n`,
    );
    return 2;
  }
  const { store, db, close } = await openStores(config);
  try {
    const result = await rebuildProjection(db, store, new DomainEventCodec(createHcpUpcasters()), projection);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await close();
  }
}

/** The event store and the read-model database, as HCP itself would open them (embedded when unset). */
async function openStores(config: HcpConfig) {
  const database = await openCliDatabase(config);
  const url = database.url;
  const pool = new Pool({ connectionString: url, max: 4 });
  const store: EventStore = config.eventStoreConnectionString
    ? await openEventStoreDb({ connectionString: config.eventStoreConnectionString })
    : new PostgresEventStore({ pool });
  const db = createDataSource(url, { poolSize: 4, applicationName: 'hcp-admin' });
  await db.initialize();
  return {
    store,
    db,
    close: async () => {
      await store.close();
      await db.destroy();
      await pool.end();
      await database.close();
    },
  };
}

async function replay(config: HcpConfig, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { from: { type: 'string' }, to: { type: 'string' }, project: { type: 'string' } },
    strict: true,
  });
  const time = (v: string | undefined, name: string): Date | undefined => {
    if (v === undefined) return undefined;
    const at = new Date(v);
    if (Number.isNaN(at.getTime())) throw new Error(`--${name} must be an RFC 3339 time`);
    return at;
  };
  const filter = { from: time(values.from, 'from'), to: time(values.to, 'to'), project: values.project };
  const { store, close } = await openStores(config);
  try {
    for await (const record of replayAudit(store, createHcpUpcasters(), filter))
      process.stdout.write(`${JSON.stringify(record)}\n`);
    return 0;
  } finally {
    await close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
