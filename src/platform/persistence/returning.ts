import { DataSource } from 'typeorm';

/**
 * Rows of an UPDATE or DELETE ... RETURNING. TypeORM's plain `query` answers `[rows, count]` for those
 * commands but rows for others; the structured result is the same shape for all.
 */
export async function queryReturning<T = Record<string, unknown>>(
  db: DataSource,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const runner = db.createQueryRunner();
  try {
    return (await runner.query(sql, params, true)).records as T[];
  } finally {
    await runner.release();
  }
}
