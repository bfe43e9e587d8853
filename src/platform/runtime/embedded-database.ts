import type { Logger } from '@nestjs/common';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '@hcp/local-postgres';
import { HcpConfig } from '../../config/hcp-config';

/**
 * The data folder's own PostgreSQL, for a configuration without DATABASE_URL. Supervised: HCP outlives
 * its database, so a server that dies under it comes back on the same port and the pools reconnect.
 */
export function openEmbeddedDatabase(config: HcpConfig, logger: Logger): Promise<EmbeddedPostgres> {
  return startEmbeddedPostgres({
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    logger,
    supervise: true,
  });
}
