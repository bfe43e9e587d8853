import { DataSource } from 'typeorm';

/**
 * HCP's tables that hold rows but have no planner statistics: after `pg_upgrade` (before PostgreSQL 18)
 * or a dump restored into a new cluster. Autovacuum analyzes a table only once enough of its rows change,
 * so a restored table may wait for hours, and meanwhile the planner guesses a batch lookup by key (a
 * projection's rows for 200 ids) is cheapest as a scan of the whole table: 5-28 ms instead of about 1.
 *
 * A table analyzed while empty (every fresh database) has no statistics and no pages, and one whose rows
 * were all deleted has `reltuples = 0`: neither is named, so a start after the first finds nothing.
 *
 * Nor is a table under a megabyte, where a whole scan is cheap anyway. Analyzed, a table of a few rows
 * (the nine events of the catalog `npm start` seeds before its API processes start and migrate) tells
 * the planner it is that small, and a prepared statement's generic plan made then reads it whole,
 * however far it grows, until autovacuum analyzes it again: a subscription's page read took 18 ms
 * instead of 0.4 at 60,000 events (bench/README.md, "the fifteenth session"). Without statistics the
 * planner assumes a table of at least ten pages, and its plans use the keys.
 */
const MIN_ANALYZED_BYTES = 1024 * 1024;

const TABLES_WITHOUT_STATISTICS = `
  SELECT format('%I.%I', n.nspname, c.relname) AS name
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'm')
    AND c.relpersistence <> 't'
    AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
    AND pg_has_role(c.relowner, 'USAGE')
    AND c.reltuples <> 0
    AND pg_relation_size(c.oid) >= ${MIN_ANALYZED_BYTES}
    AND NOT EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname)
  ORDER BY 1`;

/**
 * Analyzes each of the tables HCP's role owns that holds rows without statistics, and returns their
 * names. One `ANALYZE` samples at most 30,000 rows of a table (0.2 s for a 460 MB table in cache here,
 * more from a cold disk), so a start after a restore pays that once per table.
 */
export async function analyzeTablesWithoutStatistics(dataSource: DataSource): Promise<string[]> {
  const rows: Array<{ name: string }> = await dataSource.query(TABLES_WITHOUT_STATISTICS);
  for (const { name } of rows) await dataSource.query(`ANALYZE ${name}`);
  return rows.map((r) => r.name);
}
