import { EntityManager } from 'typeorm';
import { isVmRequestEvent, jobQueuedFor, VM_REQUEST_EVENTS, VM_STREAM_PREFIX, VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection } from '@hcp/projections';
import { dispatchContextOf, JobQueue, JobRepository, queueMissingJobs } from '../../jobs';

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
  readonly eventTypes: ReadonlySet<string> = new Set(VM_REQUEST_EVENTS);

  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
  ) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const requested = events.flatMap(({ event, streamId, context }) => {
      const vmEvent = event as VmEvent;
      if (!isVmRequestEvent(vmEvent)) return [];
      const ctx = dispatchContextOf(context);
      return [{ queued: jobQueuedFor(vmEvent, streamId.slice(VM_STREAM_PREFIX.length), ctx), ctx }];
    });
    await queueMissingJobs(this.jobs, this.queue, tx, requested);
  }
}
