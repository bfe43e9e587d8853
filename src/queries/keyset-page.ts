import { SelectQueryBuilder, ObjectLiteral } from 'typeorm';
import { invalidRequest } from '@hcp/domain';

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
    if (typeof created_at !== 'string' || Number.isNaN(Date.parse(created_at)) || typeof id !== 'string' || !/^[0-9a-f-]{36}$/.test(id)) throw new Error();
    return { created_at, id };
  } catch {
    throw invalidRequest('cursor is not valid', { field: 'cursor' });
  }
}

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
): Promise<Page<T>> {
  if (cursor) {
    const key = decodeCursor(cursor);
    qb.andWhere(`(${alias}.created_at, ${alias}.id) < (:cursorAt, :cursorId)`, { cursorAt: key.created_at, cursorId: key.id });
  }
  const rows = await qb.orderBy(`${alias}.created_at`, 'DESC').addOrderBy(`${alias}.id`, 'DESC').limit(limit + 1).getMany();
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    items: items.map(present),
    next_cursor: rows.length > limit && last ? encodeCursor({ created_at: last.created_at.toISOString(), id: last.id }) : null,
  };
}
