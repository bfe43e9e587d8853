import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventContext, JobQueued } from '@hcp/domain';
import { JobRepository } from '../job.repository';
import { JobQueue, queuedJobOf } from './job-queue';

/**
 * Opens a job the moment its request is accepted: its JobQueued event, then its queue row, so a worker
 * can take it at once. A context whose requests become jobs also derives them from its own events
 * (see the VM job dispatcher), so a crash between these two writes loses no job.
 */
@Injectable()
export class JobAdmission {
  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly db: DataSource,
  ) {}

  async admit(queued: JobQueued, context: EventContext): Promise<void> {
    await this.jobs.ensureQueued(queued, context);
    await this.queue.enqueue(this.db.manager, [queuedJobOf(queued)]);
  }
}
