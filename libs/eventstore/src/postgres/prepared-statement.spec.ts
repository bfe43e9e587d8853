import { prepared, preparedName } from './prepared-statement';

describe('prepared', () => {
  it('names one text the same way every time, whatever its values', () => {
    const first = prepared('SELECT * FROM "a".t WHERE id = $1', ['x']);
    const again = prepared('SELECT * FROM "a".t WHERE id = $1', ['y']);

    expect(again.name).toBe(first.name);
    expect(again).toEqual({ name: first.name, text: 'SELECT * FROM "a".t WHERE id = $1', values: ['y'] });
    expect(preparedName('SELECT * FROM "a".t WHERE id = $1')).toBe(first.name);
  });

  it('names two texts differently, so stores on two schemas can share one pool', () => {
    expect(prepared('SELECT * FROM "a".t WHERE id = $1', []).name).not.toBe(
      prepared('SELECT * FROM "b".t WHERE id = $1', []).name,
    );
  });

  it('gives names PostgreSQL keeps whole (at most 63 bytes)', () => {
    expect(prepared('SELECT 1'.repeat(1000), []).name!.length).toBeLessThanOrEqual(63);
  });
});
