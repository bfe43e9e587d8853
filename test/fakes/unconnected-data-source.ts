import { DataSource } from 'typeorm';

/**
 * A real DataSource that is never initialized, for constructing a service whose methods under test do
 * not touch the database (QuotaService.reserve and release decide on the event store alone). Nothing
 * connects; a query through it fails at once instead of reaching a server.
 */
export function unconnectedDataSource(): DataSource {
  return new DataSource({ type: 'postgres' });
}
