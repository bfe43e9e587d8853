import type { Pool } from 'pg';
import { SelectQueryBuilder, ObjectLiteral } from 'typeorm';
import { isUUID } from 'class-validator';
import { invalidField } from '@hcp/domain';
import { preparedName } from '@hcp/eventstore';

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

interface CursorKey {
  created_at: string;
  id: string;
}

/** Opaque cursors: base64url of the last row's sort key (newest first: created_at desc, id desc). */
export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify([key.created_at, key.id])).toString('base64url');
}

export function decodeCursor(cursor: string): CursorKey {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    // Checked as strictly as PostgreSQL will read them: a forged cursor is the caller's error, not ours.
    // HCP writes the time with toISOString, so a genuine cursor's time reads back to itself exactly.
    if (typeof created_at !== 'string' || !isRoundTripIso(created_at)) throw new Error();
    if (typeof id !== 'string' || !isUUID(id)) throw new Error();
    return { created_at, id };
  } catch {
    throw invalidField('cursor', 'cursor is not valid');
  }
}

function isRoundTripIso(text: string): boolean {
  // Four-digit years only: JavaScript reads expanded years PostgreSQL refuses.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(text) || text < '1970') return false;
  const time = new Date(text);
  return !Number.isNaN(time.getTime()) && time.toISOString() === text;
}

/** WHERE conditions of plain SQL with their positional parameters ($1, $2, ... in the order added). */
export class SqlConditions {
  readonly conditions: string[] = [];
  readonly params: unknown[] = [];

  /** Adds a value and answers its placeholder. */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  and(condition: string): this {
    this.conditions.push(condition);
    return this;
  }
}

export interface SqlRunner {
  query(sql: string, params: unknown[]): Promise<unknown[]>;
}

/**
 * The page below in plain parameterised SQL, for the hot reads (a tenant's VM list): building the
 * statement with TypeORM's query builder cost more CPU than PostgreSQL spent answering it.
 * `select` and `from` are trusted SQL; every value goes through `where.param`.
 */
export async function keysetPageSql<R extends { id: string; created_at: Date }, T>(
  db: SqlRunner,
  statement: { select: string; from: string; where: SqlConditions },
  limit: number,
  cursor: string | undefined,
  present: (row: R) => T,
): Promise<Page<T>> {
  const rows = (await db.query(...keysetSql(statement, limit, cursor))) as R[];
  const page = pageEnd(rows, limit, keyOfRow);
  return { items: page.items.map(present), next_cursor: page.next_cursor };
}

/**
 * The same page as JSON text (a `Page` of whatever `item` builds), without a value parsed in between:
 * `item` is trusted SQL answering each row's JSON text (e.g. a column of it), and `db` must
 * answer every column as the text PostgreSQL sent (see textRows).
 */
export async function keysetPageJsonText(
  db: SqlRunner,
  statement: { item: string; from: string; where: SqlConditions },
  limit: number,
  cursor: string | undefined,
): Promise<string> {
  // Not `AS created_at`: ORDER BY would sort by that text instead of riding the index.
  const select = `${statement.item} AS item, id, ${ISO_CREATED_AT} AS created_iso`;
  const [sql, params] = keysetSql({ select, from: statement.from, where: statement.where }, limit, cursor);
  const rows = (await db.query(sql, params)) as Array<{ item: string; id: string; created_iso: string }>;
  const page = pageEnd(rows, limit, (last) => ({ created_at: last.created_iso, id: last.id }));
  return `{"items":[${page.items.map((row) => row.item).join(',')}],"next_cursor":${JSON.stringify(page.next_cursor)}}`;
}

/** The sort key of a row read with its created_at as a Date. */
const keyOfRow = (row: { id: string; created_at: Date }): CursorKey => ({
  created_at: row.created_at.toISOString(),
  id: row.id,
});

/**
 * The page of `rows`, read with one more than `limit` so that a further row tells there is a next page;
 * the cursor is the sort key of the page's last row.
 */
function pageEnd<R>(rows: R[], limit: number, keyOf: (last: R) => CursorKey): Page<R> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > limit && last ? encodeCursor(keyOf(last)) : null };
}

/** created_at as toISOString writes it, the form cursors carry (HCP stores milliseconds, never more). */
const ISO_CREATED_AT = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

function keysetSql(
  statement: { select: string; from: string; where: SqlConditions },
  limit: number,
  cursor: string | undefined,
): [string, unknown[]] {
  const { where } = statement;
  if (cursor) {
    const key = decodeCursor(cursor);
    where.and(`(created_at, id) < (${where.param(key.created_at)}::timestamptz, ${where.param(key.id)}::uuid)`);
  }
  const conditions = where.conditions.length ? where.conditions.join(' AND ') : 'true';
  const sql = `SELECT ${statement.select} FROM ${statement.from} WHERE ${conditions} ORDER BY created_at DESC, id DESC LIMIT ${where.param(limit + 1)}`;
  return [sql, where.params];
}

/**
 * A runner on `pool` answering every column as PostgreSQL's text, unparsed (for JSON text it holds).
 * Its statements are prepared: planning cost PostgreSQL more than running a VM's detail read (one
 * connection: 108 µs of PostgreSQL CPU unnamed, 47 µs prepared). The texts are few (one per
 * combination of a list's filters), so their names are kept rather than hashed per call.
 */
export function textRows(pool: Pool): SqlRunner {
  const names = new Map<string, string>();
  return {
    query: async (text, values) => {
      let name = names.get(text);
      if (name === undefined) {
        name = preparedName(text);
        if (names.size < MAX_NAMED_TEXTS) names.set(text, name);
      }
      return (await pool.query({ name, text, values, types: UNPARSED })).rows;
    },
  };
}

/** More texts than a list's filters combine into: a bound, not a size anyone should reach. */
const MAX_NAMED_TEXTS = 1_000;

const UNPARSED = { getTypeParser: () => (value: string) => value };

/**
 * Keyset pagination over `(created_at, id)` in descending order: stable under concurrent inserts and as
 * cheap for the thousandth page as for the first (it rides the (project_id, created_at, id) index).
 */
export async function keysetPage<R extends ObjectLiteral & { id: string; created_at: Date }, T>(
  qb: SelectQueryBuilder<R>,
  alias: string,
  limit: number,
  cursor: string | undefined,
  present: (row: R) => T,
  /** Rows as the database returns them (a query builder without an entity). */
  raw = false,
): Promise<Page<T>> {
  if (cursor) {
    const key = decodeCursor(cursor);
    qb.andWhere(`(${alias}.created_at, ${alias}.id) < (:cursorAt, :cursorId)`, {
      cursorAt: key.created_at,
      cursorId: key.id,
    });
  }
  const ordered = qb
    .orderBy(`${alias}.created_at`, 'DESC')
    .addOrderBy(`${alias}.id`, 'DESC')
    .limit(limit + 1);
  const rows: R[] = raw ? await ordered.getRawMany() : await ordered.getMany();
  const page = pageEnd(rows, limit, keyOfRow);
  return { items: page.items.map(present), next_cursor: page.next_cursor };
}
