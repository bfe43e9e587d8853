export { startEmbeddedPostgres, type EmbeddedPostgres, type EmbeddedPostgresLogger, type EmbeddedPostgresOptions } from './embedded-postgres';
