import { startEmbeddedPostgres } from '@hcp/local-postgres';
import { HcpConfig } from '../config/hcp-config';

export interface CliDatabase {
  url: string;
  /** Stops the embedded server if this command started it; one HCP runs on is left to it. */
  close(): Promise<void>;
}

/** The database HCP itself would use: DATABASE_URL, or else the embedded PostgreSQL of HCP_DATA_DIR. */
export async function openCliDatabase(config: HcpConfig): Promise<CliDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl, close: async () => undefined };
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort });
  return { url: embedded.connectionString, close: () => (embedded.reused ? Promise.resolve() : embedded.stop()) };
}
