import type { EventContext, HcpErrorShape, JobState } from '@hcp/domain';
import type { AlongsideWrites } from '../../platform/event-sourcing/aggregate-repository';

/** The actor of every event a worker writes, on the job and on the job's resource. */
export const JOB_WORKER_ACTOR = 'hcp-worker';

/** One attempt of a job: who holds its lease, how long it may take, and the signal that its lease was lost. */
export interface JobAttempt {
  worker: string;
  deadline: Date;
  signal: AbortSignal;
  trace_id: string;
  /** The facts earlier attempts of this job recorded (latest value per key); empty on a first attempt. */
  recorded: Readonly<Record<string, unknown>>;
  /**
   * Appends a fact on the job's stream before the work acts on it (see CallContext.record): only while
   * this attempt holds the job, idempotent for the same key and value; it throws when it could not.
   */
  record(key: string, value: unknown): Promise<void>;
}

/** What an executor made of one attempt. Nothing of it is on the job's stream yet: the runner writes that. */
export type JobWork =
  /** The resource had settled this job already (recorded before a crash, or superseded by a newer request). */
  | { kind: 'settled'; error: HcpErrorShape | null }
  /**
   * The work is done (at the provider); `record` writes its outcome on the resource, which the runner
   * calls only while the lease is still held. `target` labels metrics (the provider type).
   *
   * `closing` is the job's own end (its JobSucceeded): an executor that can commits it with the outcome,
   * in one appendMany (one transaction on PostgreSQL: one commit and one wake-up of the projections
   * instead of two), and answers true; false (it could not, or the outcome was recorded already) leaves
   * the runner to append it alone, after the outcome, as before. It is made for the time the outcome is
   * stamped with (`at`, ISO 8601), so the job never ends before the outcome it waited for happened.
   */
  | { kind: 'done'; target: string; record(closing?: JobClosing): Promise<boolean> }
  /** The work failed; the runner decides between another attempt and failing the job. */
  | { kind: 'failed'; target: string; error: unknown };

/** The job's end, as writes to commit with the outcome recorded at `at`. */
export type JobClosing = (at: string) => AlongsideWrites;

/**
 * The port through which a context runs its kind of jobs. The jobs context owns the queue, leases,
 * attempts, retries and the job's own events; an executor owns the work and what it means for the
 * job's resource. Register one per job kind with `JobExecutors.register`.
 */
export interface JobExecutor {
  perform(job: JobState, attempt: JobAttempt): Promise<JobWork>;
  /** The job failed for good: its resource settles where a failed operation leaves it. */
  recordFailure(job: JobState, error: HcpErrorShape): Promise<void>;
  /**
   * Ops retry a failed job: its resource takes the job's operation again (same job id), or this throws
   * the CONFLICT that says why it cannot. Idempotent: a resource that awaits the job already is left as it is.
   */
  reopen(job: JobState, context: EventContext): Promise<void>;
}
