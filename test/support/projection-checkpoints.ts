import { DataSource } from 'typeorm';

/**
 * A projection's checkpoint row read and placed directly, for tests of how checkpoints move (their rows
 * also serve as markers a test's work writes, so such tests need no table of their own).
 */
export function projectionCheckpoints(ds: DataSource) {
  return {
    /** The stored position as text, null when there is no row. */
    position: async (name: string): Promise<string | null> => {
      const rows = await ds.query(`SELECT position::text AS p FROM projection_checkpoints WHERE name = $1`, [name]);
      return rows.length ? rows[0].p : null;
    },
    /** A row at `value`, written outside any projection. */
    at: (name: string, value: number): Promise<unknown> =>
      ds.query(`INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, $2, now())`, [name, value]),
  };
}
