import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Events a projection could not apply: the runner records one here, in the transaction that moves the
 * projection's checkpoint past it, so the projection goes on and ops can retry or skip it later.
 * One row per (projection, event): a retried event that fails again updates its row.
 */
export class ProjectionDeadLetters1767657600000 implements MigrationInterface {
  name = 'ProjectionDeadLetters1767657600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE projection_dead_letters (
        id uuid PRIMARY KEY,
        projection text NOT NULL,
        position bigint NOT NULL,
        event_id text NOT NULL,
        stream_id text NOT NULL,
        stream_revision bigint NOT NULL,
        event_type text NOT NULL,
        error text NOT NULL,
        attempts integer NOT NULL CHECK (attempts >= 1),
        status text NOT NULL CHECK (status IN ('open', 'retried', 'skipped', 'resolved')),
        first_failed_at timestamptz NOT NULL,
        last_failed_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        UNIQUE (projection, event_id)
      )`);
    await q.query(
      `CREATE INDEX projection_dead_letters_time ON projection_dead_letters (first_failed_at DESC, id DESC)`,
    );
    await q.query(
      `CREATE INDEX projection_dead_letters_open ON projection_dead_letters (projection) WHERE status = 'open'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS projection_dead_letters`);
  }
}
