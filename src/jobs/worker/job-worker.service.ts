import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HcpConfig } from '../../config/hcp-config';
import { HcpRuntime } from '../../platform/runtime/hcp-runtime';
import { HCP_CONFIG, HCP_RUNTIME } from '../../platform/tokens';
import { JobQueue } from '../queue/job-queue';
import { JobQueueListener } from '../queue/job-queue.listener';
import { JobRunner } from './job-runner';
import { JobWorker } from './job-worker';

/** The job worker of a process whose HCP_ROLES include `worker`, woken by the queue's notifications. */
@Injectable()
export class JobWorkerService implements OnApplicationBootstrap, OnApplicationShutdown {
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

  async onApplicationShutdown(): Promise<void> {
    await this.listener?.stop();
    await this.worker?.stop();
  }
}
