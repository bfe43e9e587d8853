import { MigrationInterface, QueryRunner } from 'typeorm';

/** Idempotency keys of job-starting requests: the first answer, kept 24 h, scoped to the project. */
export class IdempotencyKeys1767312000000 implements MigrationInterface {
  name = 'IdempotencyKeys1767312000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE idempotency_keys (
        project_id text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        state text NOT NULL CHECK (state IN ('pending', 'completed')),
        response_status int,
        -- json, not jsonb: a replay answers byte for byte what the first request answered
        response_body json,
        response_location text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project_id, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS idempotency_keys`);
  }
}
