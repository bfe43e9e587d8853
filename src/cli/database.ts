import { startEmbeddedPostgres } from '@hcp/local-postgres';
import { HcpConfig } from '../config/hcp-config';

/**
 * The database HCP itself would use: DATABASE_URL, or else the embedded PostgreSQL of HCP_DATA_DIR,
 * started (or taken over from a running HCP) and left running for HCP to take over in turn.
 */
export async function databaseUrlOf(config: HcpConfig): Promise<string> {
  if (config.databaseUrl) return config.databaseUrl;
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort });
  return embedded.connectionString;
}
