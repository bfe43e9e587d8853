import type { SqlWrite } from '../event-store.port';
import { combinedSqlWrites } from './combined-sql-writes';

const rowsWrite = (kind: string, items: string[]): SqlWrite => ({
  sql: `INSERT INTO ${kind} SELECT * FROM unnest($1::text[])`,
  params: [`{${items.join(',')}}`],
  rows: { kind, items, of: (all) => rowsWrite(kind, all as string[]) },
});
const plain = (sql: string): SqlWrite => ({ sql, params: [] });

describe('combinedSqlWrites', () => {
  it('sends the writes of one kind as one write of all their rows, where the first of them stood', () => {
    const sent = combinedSqlWrites([
      plain('UPDATE a'),
      rowsWrite('queue', ['j1']),
      plain('UPDATE b'),
      rowsWrite('queue', ['j2', 'j3']),
      rowsWrite('usage', ['u1']),
      rowsWrite('queue', ['j4']),
    ]);

    expect(sent.map((w) => [w.sql, w.params])).toEqual([
      ['UPDATE a', []],
      ['INSERT INTO queue SELECT * FROM unnest($1::text[])', ['{j1,j2,j3,j4}']],
      ['UPDATE b', []],
      ['INSERT INTO usage SELECT * FROM unnest($1::text[])', ['{u1}']],
    ]);
  });

  it('leaves a write alone when no other of its kind is sent with it', () => {
    const only = rowsWrite('queue', ['j1']);
    const writes = [plain('UPDATE a'), only];

    expect(combinedSqlWrites(writes)).toEqual(writes);
    expect(combinedSqlWrites(writes)[1]).toBe(only);
  });

  it('keeps writes without rows as they are, in their order', () => {
    const writes = [plain('UPDATE a'), plain('UPDATE a'), plain('DELETE c')];

    expect(combinedSqlWrites(writes)).toEqual(writes);
  });
});
