/** Anything that runs one SQL statement: a pg client or pool, or a TypeORM QueryRunner in a migration. */
export interface SqlRunner {
  query(sql: string): Promise<unknown>;
}

/*
 * The schema name is interpolated into DDL, LISTEN and lock keys, so it is restricted to plain lower-case
 * identifiers (no quoting or case-folding surprises) and kept short enough that the notification channel
 * stays under PostgreSQL's 63-byte identifier limit.
 */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

export interface EventStoreNames {
  /** Qualified, quoted table name. */
  table: string;
  /** Channel notified on every committed append. */
  channel: string;
  /** Text hashed into the session lock that orders position allocation (see PostgresEventStore.append). */
  allocationLockKey: string;
  streamLockKey(streamId: string): string;
}

export function eventStoreNames(schema: string): EventStoreNames {
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`invalid event store schema name ${JSON.stringify(schema)}: expected ${SCHEMA_NAME.source}`);
  }
  return {
    table: `"${schema}".hcp_events`,
    channel: `${schema}_hcp_events`,
    allocationLockKey: `hcp_events/${schema}/allocate`,
    streamLockKey: (streamId) => `hcp_events/${schema}/stream/${streamId}`,
  };
}

/** Creates the event table (and the schema unless it is `public`). Idempotent; meant for migrations. */
export async function installPostgresEventStoreSchema(client: SqlRunner, schema = 'public'): Promise<void> {
  const { table } = eventStoreNames(schema);
  // `public` always exists, and CREATE SCHEMA would need a privilege the application role may lack.
  if (schema !== 'public') await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  // tx_id lets readers stay below the oldest in-flight writer (see PostgresEventStore and DESIGN.md).
  // The identity must keep the default CACHE 1: per-session caches would hand out positions out of
  // allocation order and break the ordering the subscriptions rely on.
  await client.query(`
    CREATE TABLE IF NOT EXISTS ${table} (
      position    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      stream_id   text        NOT NULL,
      revision    bigint      NOT NULL,
      event_id    uuid        NOT NULL,
      type        text        NOT NULL,
      data        jsonb       NOT NULL,
      metadata    jsonb       NOT NULL DEFAULT '{}'::jsonb,
      recorded_at timestamptz NOT NULL DEFAULT now(),
      tx_id       xid8        NOT NULL DEFAULT pg_current_xact_id(),
      CONSTRAINT hcp_events_event_id_key UNIQUE (event_id),
      CONSTRAINT hcp_events_stream_revision_key UNIQUE (stream_id, revision)
    )`);
}

/**
 * Drops the event table. The schema itself is left in place: it may hold other objects (read models,
 * checkpoints), so removing it is the caller's decision.
 */
export async function dropPostgresEventStoreSchema(client: SqlRunner, schema = 'public'): Promise<void> {
  const { table } = eventStoreNames(schema);
  await client.query(`DROP TABLE IF EXISTS ${table}`);
}
