import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One row per console session an HCP instance may be relaying: which instance holds it and until when
 * (renewed while the relay runs). A row whose hold ran out belongs to an instance that died: the console
 * sweeper closes its session.
 */
export class ConsoleSessionHolds1767744000031 implements MigrationInterface {
  name = 'ConsoleSessionHolds1767744000031';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE console_session_holds (
        session_id text PRIMARY KEY,
        holder text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX console_session_holds_expiry ON console_session_holds (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS console_session_holds`);
  }
}
