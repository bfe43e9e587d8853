import type { SqlWrite, SqlWriteRows } from '../event-store.port';

/** The writes to send, those of one `rows.kind` combined (see `SqlWrite.rows`); the others as they are. */
export function combinedSqlWrites(writes: readonly SqlWrite[]): SqlWrite[] {
  const kinds = new Map<string, { at: number; first: SqlWriteRows; items: unknown[] }>();
  const sent: SqlWrite[] = [];
  for (const write of writes) {
    if (!write.rows) {
      sent.push(write);
      continue;
    }
    const kind = kinds.get(write.rows.kind);
    if (kind) kind.items.push(...write.rows.items);
    else kinds.set(write.rows.kind, { at: sent.push(write) - 1, first: write.rows, items: [...write.rows.items] });
  }
  for (const { at, first, items } of kinds.values()) if (items.length > first.items.length) sent[at] = first.of(items);
  return sent;
}
