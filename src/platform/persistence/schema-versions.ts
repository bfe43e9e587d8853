import { DataSource } from 'typeorm';
import { MIGRATIONS } from './migrations';

/** A migration is known by its class name; its version is the 13-digit timestamp the name ends with. */
export interface SchemaMigration {
  version: number;
  name: string;
  /** applied: in code and database; pending: in code only; unknown: applied by another (newer) release. */
  state: 'applied' | 'pending' | 'unknown';
}

export interface SchemaVersions {
  /** Every migration of code and database, by version (unknown ones among them). */
  migrations: SchemaMigration[];
  /** Names in the order they were applied (the order `down` reverts them in, last first). */
  appliedOrder: string[];
  pending: string[];
  unknown: string[];
}

export function versionOf(name: string): number {
  return Number.parseInt(name.slice(-13), 10);
}

export const CODE_MIGRATIONS: ReadonlyArray<{ version: number; name: string }> = MIGRATIONS.map((m) => ({
  version: versionOf(m.name),
  name: m.name,
})).sort((a, b) => a.version - b.version);

/** What this release's code expects against what the database holds. */
export async function schemaVersions(dataSource: DataSource): Promise<SchemaVersions> {
  const table = await dataSource.query(`SELECT to_regclass('schema_migrations') AS t`);
  const rows: Array<{ name: string; timestamp: string }> = table[0].t
    ? await dataSource.query(`SELECT name, "timestamp" FROM schema_migrations ORDER BY id`)
    : [];
  const applied = new Set(rows.map((r) => r.name));
  const known = new Set(CODE_MIGRATIONS.map((m) => m.name));
  const migrations: SchemaMigration[] = [
    ...CODE_MIGRATIONS.map((m) => ({ ...m, state: applied.has(m.name) ? ('applied' as const) : ('pending' as const) })),
    ...rows
      .filter((r) => !known.has(r.name))
      .map((r) => ({ version: Number(r.timestamp), name: r.name, state: 'unknown' as const })),
  ].sort((a, b) => a.version - b.version);
  return {
    migrations,
    appliedOrder: rows.map((r) => r.name),
    pending: migrations.filter((m) => m.state === 'pending').map((m) => m.name),
    unknown: migrations.filter((m) => m.state === 'unknown').map((m) => m.name),
  };
}

/**
 * The version an operator names: a migration's timestamp or its class name (any case), or 0 for "before
 * the first migration". Undefined when this release has no such migration.
 */
export function resolveVersion(text: string): number | undefined {
  const wanted = text.trim().toLowerCase();
  if (wanted === '0') return 0;
  return CODE_MIGRATIONS.find((m) => String(m.version) === wanted || m.name.toLowerCase() === wanted)?.version;
}
