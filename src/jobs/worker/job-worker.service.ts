import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HcpConfig } from '../../config/hcp-config';
import { HcpRuntime } from '../../platform/runtime/hcp-runtime';
import { HCP_CONFIG, HCP_RUNTIME } from '../../platform/tokens';
import { JobQueue } from '../queue/job-queue';
import { JobQueueListener } from '../queue/job-queue.listener';
import { JobRunner } from './job-runner';
import { JobWorker } from './job-worker';

/**
 * The part of HCP_SHUTDOWN_GRACE_MS the worker may use to stop: running jobs get half of it to finish,
 * the rest is for giving back those that did not. The remaining 40 % is for the HTTP server, the
 * projections and closing the database, which the give-back still needs.
 */
export const WORKER_SHARE_OF_SHUTDOWN_GRACE = 0.6;

/** The job worker of a process whose HCP_ROLES include `worker`, woken by the queue's notifications. */
@Injectable()
export class JobWorkerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('background');
  private worker: JobWorker | null = null;
  private listener: JobQueueListener | null = null;

  constructor(
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    @Inject(HCP_RUNTIME) private readonly runtime: HcpRuntime,
    private readonly queue: JobQueue,
    private readonly runner: JobRunner,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.roles.includes('worker')) return;
    const { jobs } = this.config;
    const worker = new JobWorker(this.queue, this.runner, {
      leaseMs: jobs.leaseMs,
      concurrency: jobs.workerConcurrency,
      pollMs: jobs.pollMs,
      maxAttempts: jobs.maxAttempts,
      retryBackoffMs: jobs.retryBackoffMs,
      attemptTimeoutMs: jobs.attemptTimeoutMs,
    });
    this.listener = new JobQueueListener(this.runtime.pool, () => worker.notify());
    await this.listener.start();
    worker.start();
    this.worker = worker;
    this.logger.log(`job worker ${worker.id} started`);
  }

  /** Before the HTTP server and the database close: giving jobs back needs the database. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
    await this.worker?.stop(Math.floor(this.config.shutdown.graceMs * WORKER_SHARE_OF_SHUTDOWN_GRACE));
  }
}
