import { Injectable } from '@nestjs/common';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { JobQueue } from './job-queue';

/** How often a worker process samples the queue for its gauges (a count over the unfinished rows). */
export const JOB_QUEUE_GAUGES_MS = 10_000;

/**
 * The queue's gauges (jobs by state, the longest wait, the oldest unfinished job), sampled from the shared
 * table by worker processes: they tell stuck jobs apart from busy workers, which counters of finished jobs
 * cannot. While the database cannot answer, the last values stay (the run fails and is logged).
 */
@Injectable()
export class JobQueueGauges {
  constructor(
    private readonly queue: JobQueue,
    private readonly metrics: HcpMetrics,
  ) {}

  async record(): Promise<void> {
    const census = await this.queue.census();
    for (const state of ['due', 'scheduled', 'running', 'lease_expired'] as const)
      this.metrics.jobQueueJobs.set({ state }, census[state]);
    this.metrics.jobQueueOldestDue.set(census.oldest_due_s);
    this.metrics.jobQueueOldestOpen.set(census.oldest_open_s);
  }
}
