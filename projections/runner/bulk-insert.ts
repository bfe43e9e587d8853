import { EntityManager } from 'typeorm';
import { OneStatementBatch } from './projection';

/** A table as a bulk insert sees it: its columns with their SQL types, and its conflict key. */
export interface BulkTable {
  name: string;
  /** Column name → SQL type, in insert order. */
  columns: Readonly<Record<string, string>>;
  key: readonly string[];
  /** On a key conflict: overwrite every other column, or keep the row that is there. */
  onConflict: 'update' | 'nothing';
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

/** The column list `jsonb_to_recordset` types the rows with: `"name" type, ...`. */
const recordType = (columns: BulkTable['columns']): string[] =>
  Object.entries(columns).map(([name, type]) => `${quote(name)} ${type}`);

/**
 * Inserts many rows in one statement and one round trip: the rows travel as one JSON parameter and
 * `jsonb_to_recordset` types them. Far cheaper than an ORM upsert per batch (no per-row parameter
 * lists, no entity hydration), which is what projections spend their time on during a rebuild.
 */
export class BulkInsert {
  private readonly sql: (param: number) => string;

  constructor(readonly table: BulkTable) {
    const names = Object.keys(table.columns).map(quote);
    const typed = recordType(table.columns);
    const updates = Object.keys(table.columns)
      .filter((c) => !table.key.includes(c))
      .map((c) => `${quote(c)} = EXCLUDED.${quote(c)}`);
    const conflict =
      table.onConflict === 'update' && updates.length > 0 ? `DO UPDATE SET ${updates.join(', ')}` : 'DO NOTHING';
    this.sql = (param) =>
      `INSERT INTO ${quote(table.name)} (${names.join(', ')}) ` +
      `SELECT ${names.join(', ')} FROM jsonb_to_recordset($${param}::jsonb) AS r(${typed.join(', ')}) ` +
      `ON CONFLICT (${table.key.map(quote).join(', ')}) ${conflict}`;
  }

  /** Rows are plain objects keyed by column name; dates and bigints as their JSON-friendly strings. */
  async run(tx: EntityManager, rows: ReadonlyArray<object>): Promise<void> {
    if (rows.length === 0) return;
    await tx.query(this.sql(1), [JSON.stringify(rows)]);
  }

  /**
   * The insert as one data-modifying statement of a larger one, its rows the parameter `$param`: it
   * returns one row per row inserted (with `nothing` on conflict, a row that was there returns none).
   */
  statement(rows: ReadonlyArray<object>, param: number): BulkStatement {
    return { sql: `${this.sql(param)} RETURNING 1`, params: [JSON.stringify(rows)] };
  }
}

/** A data-modifying statement and its parameters, numbered from where the caller placed it. */
export interface BulkStatement {
  sql: string;
  params: unknown[];
}

/** The field of a row given to GuardedBulkUpdate that holds the guard column's expected value. */
export const EXPECTED = 'hcp_expected';

/**
 * Overwrites many rows in one statement, each only where its `guard` column still holds the value the
 * writer expects (the row's `hcp_expected` field): optimistic concurrency for a writer that remembers the
 * rows it wrote. It returns one row (the key) per row it wrote; a row another writer changed is left as it
 * is. The keys also travel as an array, so the rows are found through the key's index: joined to the JSON
 * alone, PostgreSQL estimates 100 rows for it and scans a table of a few thousand rows whole.
 */
export class GuardedBulkUpdate {
  private readonly sql: (param: number) => string;
  private readonly key: string;

  constructor(table: Omit<BulkTable, 'onConflict'>, guard: string) {
    if (table.key.length !== 1) throw new TypeError(`${table.name}: a guarded update needs a one-column key`);
    const key = table.key[0]!;
    this.key = key;
    const typed = recordType(table.columns);
    const sets = Object.keys(table.columns)
      .filter((c) => c !== key)
      .map((c) => `${quote(c)} = r.${quote(c)}`);
    this.sql = (param) =>
      `UPDATE ${quote(table.name)} AS t SET ${sets.join(', ')} ` +
      `FROM jsonb_to_recordset($${param}::jsonb) AS r(${typed.join(', ')}, ${quote(EXPECTED)} ${table.columns[guard]}) ` +
      `WHERE t.${quote(key)} = ANY($${param + 1}::${table.columns[key]}[]) AND t.${quote(key)} = r.${quote(key)} ` +
      `AND t.${quote(guard)} = r.${quote(EXPECTED)} ` +
      `RETURNING t.${quote(key)}`;
  }

  /**
   * The update as one data-modifying statement of a larger one, for rows as for BulkInsert each with its
   * expected guard value in `hcp_expected`; its parameters are `$param` and `$param + 1`.
   */
  statement(rows: ReadonlyArray<Record<string, unknown>>, param: number): BulkStatement {
    return { sql: this.sql(param), params: [JSON.stringify(rows), rows.map((row) => row[this.key])] };
  }
}

/** Rows for several tables, each with the BulkInsert that writes them, in the order to write them. */
export type BulkInserts = ReadonlyArray<readonly [BulkInsert, ReadonlyArray<object>]>;

/** Runs each insert with its rows in `tx`, one statement per table that has rows. */
export async function runBulkInserts(tx: EntityManager, inserts: BulkInserts): Promise<void> {
  for (const [insert, rows] of inserts) await insert.run(tx, rows);
}

/**
 * The same inserts as one batch statement: every row must be new (a row already there means the batch
 * was applied before, and `apply` gets it instead).
 */
export function bulkInsertBatch(inserts: BulkInserts): OneStatementBatch {
  const statements: string[] = [];
  const params: unknown[] = [];
  let rows = 0;
  for (const [insert, values] of inserts) {
    if (values.length === 0) continue;
    // Each statement's parameters are numbered on from those of the statements before it.
    const part = insert.statement(values, params.length + 1);
    statements.push(part.sql);
    params.push(...part.params);
    rows += values.length;
  }
  return { statements, params, rows, committed: () => undefined, refused: () => undefined };
}
