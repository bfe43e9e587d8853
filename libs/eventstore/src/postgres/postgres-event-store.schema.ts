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
  /** Qualified name of the guard function of a one-round-trip append (installPostgresEventStoreAppendGuard). */
  appendGuard: string;
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
    appendGuard: `"${schema}".hcp_append_guard`,
  };
}

/**
 * Creates everything the store needs in `schema`, as this release has it: the event table and the append
 * guard. Idempotent. HCP's own migrations install the parts in the releases that brought them.
 */
export async function installPostgresEventStoreSchema(client: SqlRunner, schema = 'public'): Promise<void> {
  await installPostgresEventStoreTable(client, schema);
  await installPostgresEventStoreAppendGuard(client, schema);
  await installPostgresEventStoreGuardIndexLookups(client, schema);
}

/** Creates the event table (and the schema unless it is `public`). Idempotent; meant for migrations. */
export async function installPostgresEventStoreTable(client: SqlRunner, schema = 'public'): Promise<void> {
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

/** The SQLSTATE the append guard raises; PostgreSQL's own codes never begin with `HC`. */
export const APPEND_GUARD_REFUSED = 'HC001';

/**
 * Creates (or replaces) the append guard: the check PostgresEventStore runs in the script that inserts,
 * instead of reading the streams' state a round trip earlier (see its guardedAppend). It takes the stream
 * locks (`try_locks`: only tries them), then, in a statement whose snapshot comes after the locks, checks
 * that every stream is at the revision expected (-1: no stream), that none of the event ids is stored and
 * that the transaction has no id yet; otherwise it raises APPEND_GUARD_REFUSED. A function rather than a
 * DO block, so that PostgreSQL plans its statements once per session: measured with pgbench, the same
 * guard as a DO block cost 0.15–0.2 ms more per transaction. Idempotent; meant for migrations.
 */
export async function installPostgresEventStoreAppendGuard(client: SqlRunner, schema = 'public'): Promise<void> {
  const { table, appendGuard } = eventStoreNames(schema);
  await client.query(`
    CREATE OR REPLACE FUNCTION ${appendGuard}(
      stream_ids text[], expected bigint[], event_ids uuid[], lock_keys text[], try_locks boolean
    ) RETURNS void LANGUAGE plpgsql AS $guard$
    BEGIN
      -- The keys come sorted: every writer takes its locks in one order (see PostgresEventStore).
      IF try_locks THEN
        IF EXISTS (
          SELECT 1 FROM (
            SELECT pg_try_advisory_xact_lock(hashtextextended(k.key, 0)) AS locked
            FROM unnest(lock_keys) WITH ORDINALITY AS k(key, ord) ORDER BY k.ord
          ) AS l
          WHERE NOT l.locked
        ) THEN
          RAISE EXCEPTION USING ERRCODE = '${APPEND_GUARD_REFUSED}', MESSAGE = 'hcp append guard: a stream is busy';
        END IF;
      ELSE
        PERFORM pg_advisory_xact_lock(hashtextextended(k.key, 0))
        FROM unnest(lock_keys) WITH ORDINALITY AS k(key, ord) ORDER BY k.ord;
      END IF;
      IF pg_current_xact_id_if_assigned() IS NOT NULL
         OR EXISTS (
           SELECT 1 FROM unnest(stream_ids, expected) AS s(stream_id, expected)
           WHERE coalesce(
             (SELECT e.revision FROM ${table} e WHERE e.stream_id = s.stream_id ORDER BY e.revision DESC LIMIT 1), -1
           ) <> s.expected)
         OR EXISTS (SELECT 1 FROM ${table} x WHERE x.event_id = ANY(event_ids)) THEN
        RAISE EXCEPTION USING ERRCODE = '${APPEND_GUARD_REFUSED}', MESSAGE = 'hcp append guard: not where expected';
      END IF;
    END
    $guard$`);
}

/**
 * Keeps the append guard's lookups on the indexes. PostgreSQL plans a function's statements once per
 * session and keeps the plan it got on the table as it was then: a session that first ran the guard on a
 * new, nearly empty table went on scanning every event for the ids, each against every element of the
 * array, on every append after, however many events the table came to hold (in a benchmark, 5 ms a call
 * at 40,000 events, and a fifth of PostgreSQL's CPU; bench/README.md, "the twentieth session"). None of
 * the guard's statements is better off scanning the table, so the planner may not. Run after every
 * (re)install of the guard: CREATE OR REPLACE FUNCTION drops the setting. Idempotent; meant for migrations.
 */
export async function installPostgresEventStoreGuardIndexLookups(client: SqlRunner, schema = 'public'): Promise<void> {
  await client.query(`ALTER FUNCTION ${guardSignature(schema)} SET enable_seqscan = off`);
}

/** Lets the planner choose scans for the guard again (a migration's down only). */
export async function dropPostgresEventStoreGuardIndexLookups(client: SqlRunner, schema = 'public'): Promise<void> {
  await client.query(`ALTER FUNCTION ${guardSignature(schema)} RESET enable_seqscan`);
}

/**
 * Drops the event table and its guard. The schema itself is left in place: it may hold other objects
 * (read models, checkpoints), so removing it is the caller's decision.
 */
export async function dropPostgresEventStoreSchema(client: SqlRunner, schema = 'public'): Promise<void> {
  await dropPostgresEventStoreAppendGuard(client, schema);
  await client.query(`DROP TABLE IF EXISTS ${eventStoreNames(schema).table}`);
}

/** Drops the append guard (a store without it cannot append: meant for a migration's down only). */
export async function dropPostgresEventStoreAppendGuard(client: SqlRunner, schema = 'public'): Promise<void> {
  await client.query(`DROP FUNCTION IF EXISTS ${guardSignature(schema)}`);
}

function guardSignature(schema: string): string {
  return `${eventStoreNames(schema).appendGuard}(text[], bigint[], uuid[], text[], boolean)`;
}
