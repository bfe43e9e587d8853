import { Client } from 'pg';

/**
 * Every object a migration can leave in a database, as comparable text: schemas, relations, columns,
 * indexes, constraints, types, functions (with their settings), triggers and extensions outside
 * PostgreSQL's own schemas.
 * TypeORM's bookkeeping table stays out: it outlives a full revert by design.
 */
export async function dumpSchema(url: string): Promise<Record<string, string[]>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const dump: Record<string, string[]> = {};
    for (const [part, sql] of Object.entries(CATALOG_QUERIES)) {
      const { rows } = await client.query<{ line: string }>(sql);
      dump[part] = rows.map((r) => r.line).filter((line) => !line.includes('schema_migrations'));
    }
    return dump;
  } finally {
    await client.end();
  }
}

const USER_NAMESPACE = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'`;

const CATALOG_QUERIES: Record<string, string> = {
  schemas: `SELECT n.nspname AS line FROM pg_namespace n WHERE ${USER_NAMESPACE} ORDER BY 1`,
  relations: `
    SELECT n.nspname || '.' || c.relname || ' ' || c.relkind::text ||
           coalesce(' of ' || (SELECT t.relname FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                                WHERE i.indexrelid = c.oid), '') AS line
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${USER_NAMESPACE} ORDER BY 1`,
  columns: `
    SELECT table_schema || '.' || table_name || '.' || column_name || ' #' || ordinal_position || ' ' ||
           udt_name || ' ' || is_nullable || ' default ' || coalesce(column_default, '-') ||
           ' identity ' || coalesce(identity_generation, '-') AS line
    FROM information_schema.columns WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  indexes: `SELECT schemaname || ' ' || indexdef AS line FROM pg_indexes
            WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  constraints: `
    SELECT n.nspname || '.' || c.conrelid::regclass::text || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid) AS line
    FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE ${USER_NAMESPACE} ORDER BY 1`,
  types: `
    SELECT n.nspname || '.' || t.typname || ' ' || t.typtype::text AS line
    FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE ${USER_NAMESPACE} AND t.typrelid = 0 AND t.typcategory <> 'A' ORDER BY 1`,
  functions: `
    SELECT n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
           || coalesce(' SET ' || array_to_string(p.proconfig, ', '), '') AS line
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_NAMESPACE} ORDER BY 1`,
  triggers: `SELECT tgrelid::regclass::text || ' ' || tgname AS line FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1`,
  extensions: `SELECT extname AS line FROM pg_extension ORDER BY 1`,
};
