import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventContext, jobQueuedFor, VmRequestEvent } from '@hcp/domain';
import { JobQueue, queuedJobOf } from './job-queue';
import { JobRepository } from '../job.repository';

/**
 * Opens the job of a VM request the moment it is accepted: its JobQueued event, then its queue row, so
 * a worker can take it at once instead of after the job dispatcher's next batch. The dispatcher still
 * derives both from the VM event, so a crash between the handler's writes loses no job.
 */
@Injectable()
export class JobAdmission {
  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly db: DataSource,
  ) {}

  async admit(request: VmRequestEvent, vmId: string, context: EventContext): Promise<void> {
    const queued = jobQueuedFor(request, vmId, context);
    await this.jobs.ensureQueued(queued, context);
    await this.queue.enqueue(this.db.manager, [queuedJobOf(queued)]);
  }
}
