import { EntityManager } from 'typeorm';
import { ORPHAN_STREAM_PREFIX, OrphanDestroyRequested, OrphanEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection } from '@hcp/projections';
import { JobQueue, JobRepository, queuedJobOf } from '../../jobs';
import { orphanDestroyJob } from './orphan-destroy-job';

/**
 * Turns every OrphanDestroyRequested into a queued job, durably, for a request whose command died
 * between the orphan's event and the job (see the VM job dispatcher, which this mirrors).
 */
export class OrphanJobDispatcherProjection implements Projection {
  readonly name = 'orphan-job-dispatcher';
  readonly streamPrefixes = [ORPHAN_STREAM_PREFIX];

  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
  ) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const requested = events.flatMap(({ event, streamId, context }) => {
      if ((event as OrphanEvent).type !== 'OrphanDestroyRequested') return [];
      const ctx = {
        actor: context.actor ?? 'unknown',
        trace_id: context.trace_id ?? 'unknown',
        occurred_at: context.occurred_at ?? new Date().toISOString(),
      };
      const orphanId = streamId.slice(ORPHAN_STREAM_PREFIX.length);
      return [{ queued: orphanDestroyJob(event as OrphanDestroyRequested, orphanId, ctx), ctx }];
    });
    if (requested.length === 0) return;
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
