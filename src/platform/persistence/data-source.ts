import { DataSource } from 'typeorm';
import {
  JobReadModelRow,
  OpsResourceRow,
  OrphanReadModelRow,
  ProjectionCheckpoint,
  QuotaReadModelRow,
  VmReadModelRow,
} from '@hcp/projections';
import { MIGRATIONS } from './migrations';

/** How long a request waits for a database connection before it fails (and answers 503). */
export const DATABASE_CONNECTION_TIMEOUT_MS = 5000;

export const ENTITIES = [
  VmReadModelRow,
  JobReadModelRow,
  ProjectionCheckpoint,
  OpsResourceRow,
  QuotaReadModelRow,
  OrphanReadModelRow,
];

export function createDataSource(
  url: string,
  options: { poolSize?: number; applicationName?: string } = {},
): DataSource {
  return new DataSource({
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    logging: false,
    applicationName: options.applicationName ?? 'hcp',
    // While PostgreSQL is down a checkout fails after this instead of waiting on the pool for ever, so a
    // request answers 503 in seconds; keep-alive notices a dead peer on an idle connection.
    extra: { max: options.poolSize ?? 20, connectionTimeoutMillis: DATABASE_CONNECTION_TIMEOUT_MS, keepAlive: true },
  });
}

export type SchemaStatus =
  | { ok: true }
  | { ok: false; reason: 'pending_migrations' | 'unknown_migrations'; migrations: string[] };

/** Whether the database holds exactly the migrations this release expects (readiness uses it). */
export async function schemaStatus(dataSource: DataSource): Promise<SchemaStatus> {
  const expected = MIGRATIONS.map((m) => m.name);
  const table = await dataSource.query(`SELECT to_regclass('schema_migrations') AS t`);
  const applied: string[] = table[0].t
    ? (await dataSource.query(`SELECT name FROM schema_migrations`)).map((r: { name: string }) => r.name)
    : [];
  const pending = expected.filter((n) => !applied.includes(n));
  if (pending.length) return { ok: false, reason: 'pending_migrations', migrations: pending };
  const unknown = applied.filter((n) => !expected.includes(n));
  if (unknown.length) return { ok: false, reason: 'unknown_migrations', migrations: unknown };
  return { ok: true };
}
