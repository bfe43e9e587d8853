import { Injectable, Logger } from '@nestjs/common';
import {
  decideJob,
  HcpError,
  HcpErrorShape,
  JobCommand,
  JobState,
  jobDeadlineError,
  jobDeadlinePassed,
  toHcpError,
} from '@hcp/domain';
import { Loaded } from '../../platform/event-sourcing/aggregate-repository';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { outageOf } from '../../platform/availability/unavailable-error';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { JobRepository } from '../job.repository';
import { LeasedJob } from '../queue/job-queue';
import { JOB_WORKER_ACTOR, JobExecutor } from './job-executor';
import { JobExecutors } from './job-executors';

export interface JobPolicy {
  maxAttempts: number;
  retryBackoffMs: number;
  attemptTimeoutMs: number;
}

/** What the worker does with the queue row afterwards. */
export type JobExecution =
  | { kind: 'finished' }
  | { kind: 'retry'; at: Date }
  | { kind: 'lease_lost' }
  /** The attempt was given back unfinished (the worker is stopping): the row is due again at once. */
  | { kind: 'released' };

/**
 * The reason a worker aborts an attempt's signal with when it stops: the attempt is given back, not
 * lost (any other abort means the lease was lost).
 */
export class WorkerStopping extends Error {
  constructor() {
    super('the worker is stopping');
    this.name = 'WorkerStopping';
  }
}

const MAX_BACKOFF_MS = 5 * 60_000;
/** Label of finished jobs whose provider the runner never learnt (no attempt ran, or it was settled). */
const NO_PROVIDER = 'none';

/**
 * Runs one leased attempt of any job. Each step is recorded as events before the next one starts, so a
 * crash anywhere leaves a state from which the next lease continues: a running job whose lease expired
 * has its attempt written off, and an outcome its resource recorded already is not redone (the
 * executor's work itself is idempotent). No attempt starts, and no retry is planned, past the job's
 * deadline: the job fails with PROVIDER_TIMEOUT instead.
 */
@Injectable()
export class JobRunner {
  private readonly logger = new Logger('job-runner');

  constructor(
    private readonly jobs: JobRepository,
    private readonly executors: JobExecutors,
    private readonly metrics: HcpMetrics,
  ) {}

  async run(lease: LeasedJob, worker: string, policy: JobPolicy, signal: AbortSignal): Promise<JobExecution> {
    let job = await this.jobs.load(lease.job_id);
    const initial = job.state;
    if (!initial || initial.status === 'succeeded' || initial.status === 'failed') return { kind: 'finished' };
    const traceId = initial.trace_id;

    if (initial.status === 'running') {
      // The previous holder died or hung with the job running: that attempt counts as failed.
      const error = new HcpError('PROVIDER_TIMEOUT', 'the worker running this job stopped answering').toShape();
      this.metrics.leaseExpiries.inc();
      job = await this.step(job, { type: 'fail_attempt', error, retry_at: new Date().toISOString() }, traceId);
    }
    const executor = this.executors.for(initial.type);
    if (!executor) {
      const error = new HcpError('INTERNAL_ERROR', `no executor runs ${initial.type} jobs`).toShape();
      await this.step(job, { type: 'fail', error }, traceId);
      this.countFinished(initial, NO_PROVIDER, error.code);
      return { kind: 'finished' };
    }
    if (jobDeadlinePassed(stateOf(job), new Date())) {
      await this.fail(job, executor, jobDeadlineError(stateOf(job)), NO_PROVIDER);
      return { kind: 'finished' };
    }
    if (stateOf(job).attempts >= policy.maxAttempts) {
      await this.fail(job, executor, stateOf(job).error ?? toHcpError(null).toShape(), NO_PROVIDER);
      return { kind: 'finished' };
    }
    job = await this.step(job, { type: 'start', worker }, traceId);
    const running = stateOf(job);

    // Facts go on the job's stream expecting the revision this attempt last wrote: a worker that took the
    // job over (or ops) wrote since, so the append fails instead of recording for an attempt that is no
    // longer the job's. Records run one after another so they never race each other.
    let recording: Promise<unknown> = Promise.resolve();
    const record = (key: string, value: unknown): Promise<void> => {
      const next = recording.then(async () => {
        if (signal.aborted) throw leaseGone(running.id);
        job = await this.step(job, { type: 'record_fact', key, value }, traceId);
      });
      recording = next.catch(() => undefined);
      return next;
    };
    const work = await executor.perform(running, {
      worker,
      deadline: new Date(Math.min(Date.now() + policy.attemptTimeoutMs, Date.parse(running.deadline))),
      signal,
      trace_id: running.trace_id,
      recorded: running.facts ?? {},
      record,
    });
    await recording;
    if (work.kind === 'settled') {
      await this.step(job, work.error ? { type: 'fail', error: work.error } : { type: 'succeed' }, traceId);
      this.countFinished(running, NO_PROVIDER, work.error?.code ?? 'succeeded');
      return { kind: 'finished' };
    }
    if (signal.aborted) {
      if (!(signal.reason instanceof WorkerStopping)) return { kind: 'lease_lost' };
      // Stopping, but the lease is still ours: work that is done is recorded, the rest is given back.
      if (work.kind === 'failed') {
        await this.step(job, { type: 'release', worker }, traceId);
        return { kind: 'released' };
      }
    }
    if (work.kind === 'failed') {
      // A connection lost mid-attempt (a failover, a terminated session) is an outage, not a fault of
      // the job: retried like any retryable error instead of failing it as INTERNAL_ERROR.
      const outage = outageOf(work.error);
      const error = outage ?? toHcpError(work.error);
      if (outage) this.logger.warn(`job ${running.id}: attempt lost to an outage: ${String(work.error)}`);
      else if (!(work.error instanceof HcpError))
        this.logger.error(`job ${running.id}: failed unexpectedly: ${String(work.error)}`);
      if (error.retryable && running.attempts < policy.maxAttempts) {
        const at = new Date(Date.now() + backoff(policy.retryBackoffMs, running.attempts));
        if (at.getTime() >= Date.parse(running.deadline)) {
          await this.fail(job, executor, jobDeadlineError(running, error.toShape()), work.target);
          return { kind: 'finished' };
        }
        await this.step(job, { type: 'fail_attempt', error: error.toShape(), retry_at: at.toISOString() }, traceId);
        this.metrics.jobRetries.inc({ code: error.code });
        return { kind: 'retry', at };
      }
      await this.fail(job, executor, error.toShape(), work.target);
      return { kind: 'finished' };
    }
    // The job's end commits with the outcome where the executor can: one commit instead of two.
    const succeeded = decideJob(job.state, { type: 'succeed' });
    const closing =
      succeeded.length > 0
        ? (at: string) => ({
            appends: [this.jobs.appendOf(job, succeeded, eventContext(JOB_WORKER_ACTOR, traceId, new Date(at)))],
          })
        : undefined;
    if (!(await work.record(closing))) await this.jobs.append(job, succeeded, eventContext(JOB_WORKER_ACTOR, traceId));
    this.countFinished(running, work.target, 'succeeded');
    return { kind: 'finished' };
  }

  /**
   * A job the deadline sweep leased because its deadline passed while nobody ran it (waiting, or held
   * by a dead worker): it fails with PROVIDER_TIMEOUT and its resource settles as for any failed job.
   * A job whose deadline has not passed after all is handed back, due now.
   */
  async expire(lease: LeasedJob): Promise<JobExecution> {
    const job = await this.jobs.load(lease.job_id);
    const state = job.state;
    if (!state || state.status === 'succeeded' || state.status === 'failed') return { kind: 'finished' };
    if (!jobDeadlinePassed(state, new Date())) return { kind: 'retry', at: new Date() };
    const executor = this.executors.for(state.type);
    const error = jobDeadlineError(state);
    if (!executor) {
      await this.step(job, { type: 'fail', error }, state.trace_id);
      this.countFinished(state, NO_PROVIDER, error.code);
    } else {
      await this.fail(job, executor, error, NO_PROVIDER);
    }
    return { kind: 'finished' };
  }

  /** The resource settles where a failed operation leaves it, then the job fails with the taxonomy error. */
  private async fail(
    job: Loaded<JobState>,
    executor: JobExecutor,
    error: HcpErrorShape,
    provider: string,
  ): Promise<void> {
    const state = stateOf(job);
    await executor.recordFailure(state, error);
    await this.step(job, { type: 'fail', error }, state.trace_id);
    this.countFinished(state, provider, error.code);
  }

  /** Every job that finishes is counted once, here, with how it ended. */
  private countFinished(job: JobState, provider: string, outcome: string): void {
    this.metrics.jobsFinished.inc({ type: job.type, provider, outcome });
    const queuedFor = (Date.now() - Date.parse(job.created_at)) / 1000;
    if (Number.isFinite(queuedFor) && queuedFor >= 0)
      this.metrics.jobDuration.observe(
        { type: job.type, outcome: outcome === 'succeeded' ? 'succeeded' : 'failed' },
        queuedFor,
      );
  }

  /** Records one step of the job, stamped with the time it happened. */
  private step(job: Loaded<JobState>, command: JobCommand, traceId: string): Promise<Loaded<JobState>> {
    return this.jobs.append(job, decideJob(job.state, command), eventContext(JOB_WORKER_ACTOR, traceId));
  }
}

const stateOf = (job: Loaded<JobState>): JobState => job.state!;

/** A record asked for after the attempt lost the job: the work must not act on it. */
const leaseGone = (jobId: string) =>
  new HcpError('CONFLICT', `job ${jobId} is no longer held by this attempt; nothing was recorded`, undefined, true);

function backoff(baseMs: number, attempt: number): number {
  const exponential = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential * (0.8 + Math.random() * 0.4));
}
