import { Inject, Injectable, Optional } from '@nestjs/common';
import {
  DEFAULT_JOB_DEADLINE_MS,
  EventContext,
  evolveJob,
  JobEvent,
  JobQueued,
  JobState,
  jobStreamId,
} from '@hcp/domain';
import { DomainEventCodec, EventStore, StreamAppend, WrongExpectedRevisionError } from '@hcp/eventstore';
import { HcpConfig } from '../config/hcp-config';
import { AggregateRepository } from '../platform/event-sourcing/aggregate-repository';
import { EVENT_STORE, HCP_CONFIG } from '../platform/tokens';

@Injectable()
export class JobRepository extends AggregateRepository<JobState, JobEvent> {
  private readonly deadlineMs: number;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    codec: DomainEventCodec,
    @Optional() @Inject(HCP_CONFIG) config?: Pick<HcpConfig, 'jobs'>,
  ) {
    super(store, codec, jobStreamId, evolveJob);
    this.deadlineMs = config?.jobs.deadlineMs ?? DEFAULT_JOB_DEADLINE_MS;
  }

  /** The deadline of a job opened (or retried by ops) at `from`: HCP_JOB_DEADLINE_MS later. */
  deadlineFrom(from: Date | string): string {
    return new Date(new Date(from).getTime() + this.deadlineMs).toISOString();
  }

  /**
   * Opens the job's stream with its JobQueued, its deadline stamped from the time of the request.
   * Both the command handler and the job dispatcher call this for the same request; the event id is the
   * job id, so whoever comes second changes nothing (its deadline included).
   */
  async ensureQueued(queued: JobQueued, context: EventContext): Promise<void> {
    const { streamId, events, expected } = this.opening(queued, context);
    try {
      await this.store.append(streamId, events, expected);
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
    }
  }

  /** Whether the event store commits SQL writes (a job's queue row) with its events. */
  get commitsSqlWrites(): boolean {
    return this.store.commitsSqlWrites;
  }

  /** The append that opens the job's stream, to commit with the request that opens the job. */
  opening(queued: JobQueued, context: EventContext): StreamAppend {
    const stamped: JobQueued = queued.data.deadline
      ? queued
      : { ...queued, data: { ...queued.data, deadline: this.deadlineFrom(context.occurred_at) } };
    return {
      streamId: this.streamOf(queued.data.job_id),
      events: [this.codec.encode(stamped, context, queued.data.job_id)],
      expected: 'no_stream',
    };
  }
}
