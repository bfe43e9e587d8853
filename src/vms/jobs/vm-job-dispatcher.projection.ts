import { EntityManager } from 'typeorm';
import { isVmRequestEvent, jobQueuedFor, VM_STREAM_PREFIX, VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection } from '@hcp/projections';
import { JobQueue, JobRepository, queuedJobOf } from '../../jobs';

/**
 * Turns every VM request event into a queued job, durably. The command handler normally admitted the
 * job already (JobQueued, then its queue row: see JobAdmission); for a request whose handler died
 * before finishing that, the JobQueued event is ensured and the queue row inserted in the same
 * transaction as this projection's checkpoint. So an accepted request always becomes a job.
 *
 * The JobQueued append cannot join that transaction (the event store is not the read models' database
 * in every deployment), so it is idempotent instead: its event id is the job id the request carries, on
 * the job's own stream, and a batch that fails after it and is applied again appends nothing new (see
 * job-dispatcher-retry.test.ts). A request whose data fails its schema never gets here: it is
 * dead-lettered when decoded, and the store refuses a `job-undefined` stream anyway.
 */
export class VmJobDispatcherProjection implements Projection {
  readonly name = 'job-dispatcher';
  readonly streamPrefixes = [VM_STREAM_PREFIX];

  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
  ) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const requested = events.flatMap(({ event, streamId, context }) => {
      const vmEvent = event as VmEvent;
      if (!isVmRequestEvent(vmEvent)) return [];
      const ctx = {
        actor: context.actor ?? 'unknown',
        trace_id: context.trace_id ?? 'unknown',
        occurred_at: context.occurred_at ?? new Date().toISOString(),
      };
      return [{ queued: jobQueuedFor(vmEvent, streamId.slice(VM_STREAM_PREFIX.length), ctx), ctx }];
    });
    // Jobs the command handler admitted in full (event, then row) need nothing more from here.
    const admitted = await this.queue.existing(
      tx,
      requested.map((r) => r.queued.data.job_id),
    );
    const missing = requested.filter((r) => !admitted.has(r.queued.data.job_id));
    for (const { queued, ctx } of missing) await this.jobs.ensureQueued(queued, ctx);
    await this.queue.enqueue(
      tx,
      missing.map((r) => queuedJobOf(r.queued)),
    );
  }
}
