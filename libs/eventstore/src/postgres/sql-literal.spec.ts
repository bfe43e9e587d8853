import fc from 'fast-check';
import { escapeLiteral } from 'pg';
import { sqlLiteral } from './sql-literal';

describe('sqlLiteral', () => {
  it("writes every string exactly as pg's escapeLiteral does", () => {
    const tricky = fc.constantFrom("'", '\\', "\\'", "''", 'é', '\u0000', '"', '$1', '\n');
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), tricky)), (parts) => {
        const value = parts.join('');
        expect(sqlLiteral(value)).toBe(escapeLiteral(value));
      }),
      { numRuns: 2000 },
    );
  });
});
