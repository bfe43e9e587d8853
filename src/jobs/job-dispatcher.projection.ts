import { EntityManager } from 'typeorm';
import { isVmRequestEvent, jobQueuedFor, VM_STREAM_PREFIX, VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection } from '@hcp/projections/runner/projection';
import { JobQueue, NewQueuedJob } from './job-queue';
import { JobRepository } from './job.repository';

/**
 * Turns every VM request event into a queued job, durably: the job's JobQueued event is ensured (the
 * command handler normally wrote it already; this covers a crash right after the VM event) and its
 * queue row is inserted in the same transaction as this projection's checkpoint. So an accepted
 * request always becomes a job, even if the process died between the two writes of the handler.
 */
export class JobDispatcherProjection implements Projection {
  readonly name = 'job-dispatcher';
  readonly streamPrefixes = [VM_STREAM_PREFIX];

  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
  ) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const queued: NewQueuedJob[] = [];
    for (const { event, streamId, context } of events) {
      const vmEvent = event as VmEvent;
      if (!isVmRequestEvent(vmEvent)) continue;
      const vmId = streamId.slice(VM_STREAM_PREFIX.length);
      const ctx = { actor: context.actor ?? 'unknown', trace_id: context.trace_id ?? 'unknown', occurred_at: context.occurred_at ?? new Date().toISOString() };
      const jobQueued = jobQueuedFor(vmEvent, vmId, ctx);
      await this.jobs.ensureQueued(jobQueued, ctx);
      queued.push({ job_id: jobQueued.data.job_id, project_id: jobQueued.data.project_id, type: jobQueued.data.type, resource_id: vmId });
    }
    await this.queue.enqueue(tx, queued);
  }

}
