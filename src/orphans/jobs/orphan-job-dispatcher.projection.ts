import { EntityManager } from 'typeorm';
import { ORPHAN_STREAM_PREFIX, OrphanDestroyRequested, OrphanEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection } from '@hcp/projections';
import { dispatchContextOf, JobQueue, JobRepository, queueMissingJobs } from '../../jobs';
import { orphanDestroyJob } from './orphan-destroy-job';

/**
 * Turns every OrphanDestroyRequested into a queued job, durably, for a request whose command died
 * between the orphan's event and the job (see the VM job dispatcher, which this mirrors).
 */
export class OrphanJobDispatcherProjection implements Projection {
  readonly name = 'orphan-job-dispatcher';
  readonly streamPrefixes = [ORPHAN_STREAM_PREFIX];
  readonly eventTypes: ReadonlySet<string> = new Set(['OrphanDestroyRequested']);

  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
  ) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const requested = events.flatMap(({ event, streamId, context }) => {
      if ((event as OrphanEvent).type !== 'OrphanDestroyRequested') return [];
      const ctx = dispatchContextOf(context);
      const orphanId = streamId.slice(ORPHAN_STREAM_PREFIX.length);
      return [{ queued: orphanDestroyJob(event as OrphanDestroyRequested, orphanId, ctx), ctx }];
    });
    await queueMissingJobs(this.jobs, this.queue, tx, requested);
  }
}
