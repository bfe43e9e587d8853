import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The PostgreSQL that .ci/run starts; developers point HCP_TEST_DATABASE_URL elsewhere if they like. */
export const TEST_DATABASE_URL = process.env.HCP_TEST_DATABASE_URL ?? 'postgres://hcp:hcp@127.0.0.1:5432/hcp_test';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A database of its own for one test file, so suites never see each other's events or rows. */
export async function createTestDatabase(prefix = 'hcp_e2e'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => dropDatabase(name),
  };
}

/** Drops with FORCE; a backend it may not end (an autovacuum worker, without pg_signal_backend) is waited out. */
async function dropDatabase(name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      return;
    } catch (err) {
      if (
        attempt >= 20 ||
        !/must be a member of the role|is being accessed by other users/.test((err as Error).message)
      )
        throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function withAdmin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Runs one query against a database (for assertions on tables HCP does not expose). */
export async function queryDatabase<T = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * Every row of every table of a database as text: a data dump that does not depend on a pg_dump of the
 * server's version being installed.
 */
export async function dumpDatabaseText(url: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
       WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    const parts: string[] = [];
    for (const t of tables) {
      const { rows } = await client.query(
        `SELECT t::text AS row FROM ${client.escapeIdentifier(t.schema)}.${client.escapeIdentifier(t.name)} t`,
      );
      parts.push(`-- ${t.schema}.${t.name}`, ...rows.map((r) => r.row as string));
    }
    return parts.join('\n');
  } finally {
    await client.end();
  }
}
