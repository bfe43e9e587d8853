import { Inject, Injectable } from '@nestjs/common';
import { EventContext, evolveJob, JobEvent, JobQueued, JobState, jobStreamId } from '@hcp/domain';
import { DomainEventCodec, EventStore, WrongExpectedRevisionError } from '@hcp/eventstore';
import { AggregateRepository } from '../platform/event-sourcing/aggregate-repository';
import { EVENT_STORE } from '../platform/tokens';

@Injectable()
export class JobRepository extends AggregateRepository<JobState, JobEvent> {
  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    super(store, codec, jobStreamId, evolveJob);
  }

  /**
   * Opens the job's stream with its JobQueued. Both the command handler and the job dispatcher call
   * this for the same request; the event id is the job id, so whoever comes second changes nothing.
   */
  async ensureQueued(queued: JobQueued, context: EventContext): Promise<void> {
    try {
      await this.store.append(
        this.streamOf(queued.data.job_id),
        [this.codec.encode(queued, context, queued.data.job_id)],
        'no_stream',
      );
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
  }
}
