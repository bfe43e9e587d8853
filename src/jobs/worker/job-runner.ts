import { Injectable, Logger } from '@nestjs/common';
import { decideJob, HcpError, HcpErrorShape, JobCommand, JobState, toHcpError } from '@hcp/domain';
import { Loaded } from '../../platform/event-sourcing/aggregate-repository';
import { eventContext } from '../../platform/event-sourcing/event-context';
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
export type JobExecution = { kind: 'finished' } | { kind: 'retry'; at: Date } | { kind: 'lease_lost' };

const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Runs one leased attempt of any job. Each step is recorded as events before the next one starts, so a
 * crash anywhere leaves a state from which the next lease continues: a running job whose lease expired
 * has its attempt written off, and an outcome its resource recorded already is not redone (the
 * executor's work itself is idempotent).
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
      await this.step(
        job,
        { type: 'fail', error: new HcpError('INTERNAL_ERROR', `no executor runs ${initial.type} jobs`).toShape() },
        traceId,
      );
      return { kind: 'finished' };
    }
    if (stateOf(job).attempts >= policy.maxAttempts) {
      await this.fail(job, executor, stateOf(job).error ?? toHcpError(null).toShape(), traceId);
      return { kind: 'finished' };
    }
    job = await this.step(job, { type: 'start', worker }, traceId);
    const running = stateOf(job);

    const work = await executor.perform(running, {
      worker,
      deadline: new Date(Date.now() + policy.attemptTimeoutMs),
      signal,
      trace_id: running.trace_id,
    });
    if (work.kind === 'settled') {
      await this.step(job, work.error ? { type: 'fail', error: work.error } : { type: 'succeed' }, traceId);
      return { kind: 'finished' };
    }
    if (signal.aborted) return { kind: 'lease_lost' };
    if (work.kind === 'failed') {
      const error = toHcpError(work.error);
      if (!(work.error instanceof HcpError))
        this.logger.error(`job ${running.id}: failed unexpectedly: ${String(work.error)}`);
      if (error.retryable && running.attempts < policy.maxAttempts) {
        const at = new Date(Date.now() + backoff(policy.retryBackoffMs, running.attempts));
        await this.step(job, { type: 'fail_attempt', error: error.toShape(), retry_at: at.toISOString() }, traceId);
        this.metrics.jobRetries.inc({ code: error.code });
        return { kind: 'retry', at };
      }
      await this.fail(job, executor, error.toShape(), traceId);
      this.metrics.jobsFinished.inc({ type: running.type, provider: work.target, outcome: error.code });
      return { kind: 'finished' };
    }
    await work.record();
    await this.step(job, { type: 'succeed' }, traceId);
    this.metrics.jobsFinished.inc({ type: running.type, provider: work.target, outcome: 'succeeded' });
    return { kind: 'finished' };
  }

  /** The resource settles where a failed operation leaves it, then the job fails with the taxonomy error. */
  private async fail(
    job: Loaded<JobState>,
    executor: JobExecutor,
    error: HcpErrorShape,
    traceId: string,
  ): Promise<void> {
    await executor.recordFailure(stateOf(job), error);
    await this.step(job, { type: 'fail', error }, traceId);
  }

  /** Records one step of the job, stamped with the time it happened. */
  private step(job: Loaded<JobState>, command: JobCommand, traceId: string): Promise<Loaded<JobState>> {
    return this.jobs.append(job, decideJob(job.state, command), eventContext(JOB_WORKER_ACTOR, traceId));
  }
}

const stateOf = (job: Loaded<JobState>): JobState => job.state!;

function backoff(baseMs: number, attempt: number): number {
  const exponential = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential * (0.8 + Math.random() * 0.4));
}
