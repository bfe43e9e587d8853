import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DEFAULT_JOB_DEADLINE_MS, type JobQueued } from '@hcp/domain';
import type { SqlWrite } from '@hcp/eventstore';
import { queryReturning } from '../../platform/persistence/returning';

/** Channel that wakes idle workers when jobs become due. */
export const JOB_QUEUE_CHANNEL = 'hcp_job_queue';

export interface LeasedJob {
  job_id: string;
  project_id: string;
  type: string;
  resource_id: string;
  /** How many times this job has been leased, this lease included. */
  leases: number;
  /** The previous holder's lease ran out (it crashed or hung): its attempt must be written off. */
  reclaimed: boolean;
}

/** The unfinished part of the queue at one moment, for the queue gauges. */
export interface QueueCensus {
  due: number;
  scheduled: number;
  running: number;
  lease_expired: number;
  /** Seconds the longest-waiting due job (or expired lease) has waited; 0 when none. */
  oldest_due_s: number;
  /** Seconds since the oldest unfinished job was queued; 0 when none. */
  oldest_open_s: number;
}

export interface NewQueuedJob {
  job_id: string;
  project_id: string;
  type: string;
  resource_id: string;
}

/**
 * The queue rows of new jobs as one INSERT, for enqueue and for a request that commits its job with its
 * own events. A row that exists already (a dispatcher got there first) is left as it is.
 */
export function queueRowsWrite(jobs: readonly NewQueuedJob[]): SqlWrite {
  return {
    sql: `INSERT INTO job_queue (job_id, project_id, type, resource_id, status, available_at)
       SELECT j.job_id, j.project_id, j.type, j.resource_id, 'queued', now()
       FROM jsonb_to_recordset($1::jsonb) AS j(job_id uuid, project_id text, type text, resource_id uuid)
       ON CONFLICT (job_id) DO NOTHING`,
    params: [JSON.stringify(jobs)],
    // Rows of distinct jobs, each inserted unless there already: the creates of a group commit send one.
    rows: { kind: 'job_queue', items: jobs, of: (items) => queueRowsWrite(items as NewQueuedJob[]) },
  };
}

export function queuedJobOf({ data }: JobQueued): NewQueuedJob {
  return { job_id: data.job_id, project_id: data.project_id, type: data.type, resource_id: data.resource_id };
}

/**
 * The lease table behind the sagas, usable by an in-process worker and (later) a remote host agent
 * alike: lease due jobs, renew while working, then complete or requeue. Every call is guarded by the
 * lease owner, so a worker that lost its lease can no longer change the job's row.
 */
@Injectable()
export class JobQueue {
  constructor(private readonly db: DataSource) {}

  /** Inserts queue rows for newly requested jobs (inside the dispatcher's transaction) and wakes workers. */
  async enqueue(tx: EntityManager, jobs: NewQueuedJob[]): Promise<void> {
    if (jobs.length === 0) return;
    const insert = queueRowsWrite(jobs);
    await tx.query(insert.sql, insert.params);
    await tx.query(`NOTIFY ${JOB_QUEUE_CHANNEL}`);
  }

  /** Which of these jobs have a queue row already (whoever inserted it also recorded their JobQueued). */
  async existing(tx: EntityManager, jobIds: string[]): Promise<Set<string>> {
    if (jobIds.length === 0) return new Set();
    const rows: Array<{ job_id: string }> = await tx.query(
      `SELECT job_id FROM job_queue WHERE job_id = ANY($1::uuid[])`,
      [jobIds],
    );
    return new Set(rows.map((r) => r.job_id));
  }

  async lease(owner: string, leaseMs: number, limit: number): Promise<LeasedJob[]> {
    const rows = await queryReturning(
      this.db,
      `WITH due AS (
         SELECT job_id, status AS previous_status FROM job_queue
         WHERE (status = 'queued' AND available_at <= now()) OR (status = 'leased' AND lease_expires_at < now())
         ORDER BY available_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
       UPDATE job_queue q
       SET status = 'leased', lease_owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000),
           leases = q.leases + 1, updated_at = now()
       FROM due WHERE q.job_id = due.job_id
       RETURNING q.job_id, q.project_id, q.type, q.resource_id, q.leases, due.previous_status = 'leased' AS reclaimed`,
      [owner, leaseMs, limit],
    );
    return rows as unknown as LeasedJob[];
  }

  async requeue(jobId: string, owner: string, availableAt: Date): Promise<void> {
    await this.db.query(
      `UPDATE job_queue SET status = 'queued', available_at = $3, lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE job_id = $1 AND lease_owner = $2 AND status = 'leased'`,
      [jobId, owner, availableAt],
    );
  }

  /** Gives a leased job back unfinished (its worker is stopping): due now, and other workers are woken. */
  async release(jobId: string, owner: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `UPDATE job_queue SET status = 'queued', available_at = now(), lease_owner = NULL, lease_expires_at = NULL,
           updated_at = now()
         WHERE job_id = $1 AND lease_owner = $2 AND status = 'leased'`,
        [jobId, owner],
      );
      await tx.query(`NOTIFY ${JOB_QUEUE_CHANNEL}`);
    });
  }

  /**
   * Leases jobs whose deadline passed while nobody runs them: waiting, or held by a worker whose lease
   * expired. Same lock as `lease` (SKIP LOCKED), so a live worker's job is never taken. The deadline is
   * read from the job read model (a row folded before deadlines existed has none: its queued time plus
   * the default); a job the read model does not show yet is left for the next sweep. The runner decides
   * from the job's stream, not from this.
   */
  async leaseExpired(owner: string, leaseMs: number, limit: number): Promise<LeasedJob[]> {
    const rows = await queryReturning(
      this.db,
      `WITH due AS (
         SELECT q.job_id, q.status AS previous_status FROM job_queue q
         JOIN job_read_model r ON r.id = q.job_id
         WHERE (q.status = 'queued' OR (q.status = 'leased' AND q.lease_expires_at < now()))
           AND r.status IN ('queued', 'running')
           AND COALESCE((r.state->>'deadline')::timestamptz,
                        r.created_at + make_interval(secs => $4::double precision / 1000)) <= now()
         ORDER BY q.available_at
         LIMIT $3
         FOR UPDATE OF q SKIP LOCKED)
       UPDATE job_queue q
       SET status = 'leased', lease_owner = $1, lease_expires_at = now() + make_interval(secs => $2::double precision / 1000),
           leases = q.leases + 1, updated_at = now()
       FROM due WHERE q.job_id = due.job_id
       RETURNING q.job_id, q.project_id, q.type, q.resource_id, q.leases, due.previous_status = 'leased' AS reclaimed`,
      [owner, leaseMs, limit, DEFAULT_JOB_DEADLINE_MS],
    );
    return rows as unknown as LeasedJob[];
  }

  /**
   * Takes a job's row for an ops recovery, the way a worker holds it: refused (false) while a live
   * worker's lease runs; a job without a row (its dispatch was lost) gets one.
   */
  async hold(job: NewQueuedJob, owner: string, leaseMs: number): Promise<boolean> {
    const rows = await queryReturning(
      this.db,
      `INSERT INTO job_queue AS q (job_id, project_id, type, resource_id, status, available_at, lease_owner, lease_expires_at, leases)
       VALUES ($1, $2, $3, $4, 'leased', now(), $5, now() + make_interval(secs => $6::double precision / 1000), 0)
       ON CONFLICT (job_id) DO UPDATE
         SET status = 'leased', lease_owner = $5, lease_expires_at = EXCLUDED.lease_expires_at, updated_at = now()
         WHERE q.status <> 'leased' OR q.lease_expires_at < now()
       RETURNING q.job_id`,
      [job.job_id, job.project_id, job.type, job.resource_id, owner, leaseMs],
    );
    return rows.length === 1;
  }

  async complete(jobId: string, owner: string): Promise<void> {
    await this.db.query(
      `UPDATE job_queue SET status = 'done', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE job_id = $1 AND lease_owner = $2 AND status = 'leased'`,
      [jobId, owner],
    );
  }

  /** Counts the unfinished rows by state (one scan of the partial index that skips done rows). */
  async census(): Promise<QueueCensus> {
    const [row] = await this.db.query(
      `SELECT
         count(*) FILTER (WHERE status = 'queued' AND available_at <= now())::int AS due,
         count(*) FILTER (WHERE status = 'queued' AND available_at > now())::int AS scheduled,
         count(*) FILTER (WHERE status = 'leased' AND lease_expires_at >= now())::int AS running,
         count(*) FILTER (WHERE status = 'leased' AND lease_expires_at < now())::int AS lease_expired,
         COALESCE(EXTRACT(EPOCH FROM now() - min(CASE
           WHEN status = 'queued' AND available_at <= now() THEN available_at
           WHEN status = 'leased' AND lease_expires_at < now() THEN lease_expires_at END)), 0)::float8 AS oldest_due_s,
         COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS oldest_open_s
       FROM job_queue WHERE status <> 'done'`,
    );
    return row as QueueCensus;
  }

  // The statements a worker holding many jobs at once makes for all of them together (group commit);
  // each row is still guarded by its lease owner, as in `complete`.

  /** Extends the leases this owner still holds among `jobIds`; returns the ids it holds. */
  async renewMany(jobIds: string[], owner: string, leaseMs: number): Promise<Set<string>> {
    if (jobIds.length === 0) return new Set();
    const rows = await queryReturning<{ job_id: string }>(
      this.db,
      `UPDATE job_queue SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000), updated_at = now()
       WHERE job_id = ANY($1::uuid[]) AND lease_owner = $2 AND status = 'leased' RETURNING job_id`,
      [jobIds, owner, leaseMs],
    );
    return new Set(rows.map((r) => r.job_id));
  }

  /** Marks done the jobs among `jobIds` whose lease this owner still holds. */
  async completeMany(jobIds: string[], owner: string): Promise<void> {
    if (jobIds.length === 0) return;
    await this.db.query(
      `UPDATE job_queue SET status = 'done', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE job_id = ANY($1::uuid[]) AND lease_owner = $2 AND status = 'leased'`,
      [jobIds, owner],
    );
  }
}
