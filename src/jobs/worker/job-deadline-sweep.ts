import { hostname } from 'node:os';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { HcpConfig } from '../../config/hcp-config';
import { HCP_CONFIG } from '../../platform/tokens';
import { JobQueue } from '../queue/job-queue';
import { JobRunner } from './job-runner';

/** How often a worker process looks for jobs past their deadline that nobody runs. */
export const JOB_DEADLINE_SWEEP_MS = 30_000;
const BATCH = 50;

/**
 * Fails jobs whose deadline passed while no worker ran them (waiting for a retry, queued behind a full
 * worker, or held by a worker that died): the runner enforces deadlines only on jobs it leases. Rows
 * are taken like a worker takes them (SKIP LOCKED, only free or expired leases), so a live worker's job
 * is never touched; what a job becomes is decided from its stream.
 */
@Injectable()
export class JobDeadlineSweep {
  readonly owner = `deadline-sweep:${hostname()}:${process.pid}`;
  private readonly logger = new Logger('job-deadline-sweep');

  constructor(
    private readonly queue: JobQueue,
    private readonly runner: JobRunner,
    @Inject(HCP_CONFIG) private readonly config: Pick<HcpConfig, 'jobs'>,
  ) {}

  /** Fails the jobs past their deadline found now; returns how many rows it took. */
  async sweep(): Promise<number> {
    const expired = await this.queue.leaseExpired(this.owner, this.config.jobs.leaseMs, BATCH);
    for (const job of expired) {
      try {
        const result = await this.runner.expire(job);
        if (result.kind === 'retry') await this.queue.requeue(job.job_id, this.owner, result.at);
        else await this.queue.complete(job.job_id, this.owner);
      } catch (err) {
        // The lease runs out and the job is swept (or run) again: nothing is lost by giving up here.
        this.logger.warn(`job ${job.job_id}: failing it past its deadline did not work: ${(err as Error).message}`);
      }
    }
    if (expired.length > 0) this.logger.log(`failed ${expired.length} job(s) past their deadline`);
    return expired.length;
  }
}
