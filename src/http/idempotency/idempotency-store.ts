import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryReturning } from '../../platform/persistence/returning';

export interface StoredAnswer {
  status: number;
  body: unknown;
  location: string | null;
}

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'completed'; requestHash: string; answer: StoredAnswer }
  | { kind: 'pending'; requestHash: string };

/** How long an answer is replayed. */
export const RETENTION_HOURS = 24;
/**
 * After how long a pending claim counts as abandoned: its request died (a crash) or failed while the
 * database was down, so the claim could not be released. Short, because a client retrying meanwhile is
 * kept waiting, and taking over a claim whose request still runs is harmless: every job-starting command
 * derives its ids from the key, so two runs of one request record one VM and one job and answer the same.
 */
export const ABANDONED_AFTER_SECONDS = 10;

/**
 * Durable idempotency keys in PostgreSQL. The primary key (project, key) makes the claim atomic: of
 * any number of concurrent requests with one key, exactly one claims it and runs.
 */
@Injectable()
export class IdempotencyStore {
  constructor(private readonly db: DataSource) {}

  async claim(projectId: string, key: string, requestHash: string): Promise<Claim> {
    const inserted = await this.db.query(
      `INSERT INTO idempotency_keys (project_id, key, request_hash, state) VALUES ($1, $2, $3, 'pending')
       ON CONFLICT (project_id, key) DO NOTHING RETURNING 1`,
      [projectId, key, requestHash],
    );
    if (inserted.length === 1) return { kind: 'claimed' };
    // Expired answers are gone for good; an abandoned pending claim (its request died) is taken over.
    const reclaimed = await queryReturning(
      this.db,
      `UPDATE idempotency_keys
       SET request_hash = $3, state = 'pending', response_status = NULL, response_body = NULL, response_location = NULL,
           created_at = CASE WHEN created_at < now() - make_interval(hours => ${RETENTION_HOURS}) THEN now() ELSE created_at END,
           updated_at = now()
       WHERE project_id = $1 AND key = $2
         AND (created_at < now() - make_interval(hours => ${RETENTION_HOURS})
              OR (state = 'pending' AND updated_at < now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS}) AND request_hash = $3))
       RETURNING 1`,
      [projectId, key, requestHash],
    );
    if (reclaimed.length === 1) return { kind: 'claimed' };
    const [row] = await this.db.query(
      `SELECT request_hash, state, response_status, response_body, response_location FROM idempotency_keys WHERE project_id = $1 AND key = $2`,
      [projectId, key],
    );
    if (!row) return this.claim(projectId, key, requestHash);
    if (row.state === 'pending') return { kind: 'pending', requestHash: row.request_hash };
    return {
      kind: 'completed',
      requestHash: row.request_hash,
      answer: { status: row.response_status, body: row.response_body, location: row.response_location },
    };
  }

  async complete(projectId: string, key: string, answer: StoredAnswer): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET state = 'completed', response_status = $3, response_body = $4, response_location = $5, updated_at = now()
       WHERE project_id = $1 AND key = $2`,
      [projectId, key, answer.status, JSON.stringify(answer.body), answer.location],
    );
  }

  /** The request failed: free the key so a corrected retry can run. */
  async release(projectId: string, key: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE project_id = $1 AND key = $2 AND state = 'pending'`, [
      projectId,
      key,
    ]);
  }

  /** Deletes answers past their retention; returns how many. */
  async purgeExpired(): Promise<number> {
    const rows = await queryReturning(
      this.db,
      `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => ${RETENTION_HOURS}) RETURNING 1`,
      [],
    );
    return rows.length;
  }
}
