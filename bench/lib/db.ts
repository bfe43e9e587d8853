import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The server the benchmarks create their databases on (CI sets HCP_TEST_DATABASE_URL). */
export const ADMIN_URL =
  process.env.HCP_BENCH_DATABASE_URL ??
  process.env.HCP_TEST_DATABASE_URL ??
  'postgres://hcp:hcp@127.0.0.1:5432/hcp_test';

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh database for one scenario, dropped afterwards, so runs never see each other's rows. */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `hcp_bench_${randomBytes(4).toString('hex')}`;
  await withClient(ADMIN_URL, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => dropDatabase(name) };
}

async function dropDatabase(name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withClient(ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      return;
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, application_name: 'hcp-bench' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
