import { Client } from 'pg';
import { RunAs } from './binaries';
import { EmbeddedPostgresLogger, errorCode } from './support';

/** Files HCP keeps in its data folder for the local server. */
export const CLUSTER_DIR = 'postgres';
export const CREDENTIALS_FILE = 'postgres.credentials.json';
export const PORT_FILE = 'postgres.port';
export const STARTUP_LOG_FILE = 'postgres.log';

export const DB_USER = 'hcp';
export const DB_NAME = 'hcp';

export interface Credentials {
  user: string;
  password: string;
}

/** One start of the server of one data folder. */
export interface Context {
  /** Real path of the data folder (the leftover check compares it with what the kernel reports). */
  dataDir: string;
  /** `<dataDir>/postgres`: the cluster. */
  pgdata: string;
  /** The loopback port the server listens on (or is about to); may change once before the launch. */
  port: number;
  binDir: string;
  runAs: RunAs | undefined;
  credentials: Credentials;
  logger: EmbeddedPostgresLogger;
}

export function connectionString(ctx: Context, database: string): string {
  const { user, password } = ctx.credentials;
  return `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${ctx.port}/${encodeURIComponent(database)}`;
}

export function newClient(ctx: Context, database: string): Client {
  const client = new Client({ connectionString: connectionString(ctx, database), connectionTimeoutMillis: 10_000 });
  // Errors reach the caller through the pending query; without a listener they would crash the process.
  client.on('error', () => undefined);
  return client;
}

/** Creates the application database on a running server unless it exists. */
export async function ensureDatabase(ctx: Context): Promise<void> {
  const client = newClient(ctx, 'postgres');
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME]);
    if (found.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(DB_NAME)}`);
        ctx.logger.log(`embedded PostgreSQL: created the database "${DB_NAME}"`);
      } catch (error) {
        // Another HCP process sharing this server may have created it in between.
        if (errorCode(error) !== '42P04') throw error;
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}
