import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  EventContext,
  REQUEST_EVENT_VERSIONS,
  REQUEST_STREAM_PREFIX,
  ReceivedFacts,
  RefusalFacts,
  receivedData,
  RequestAnswered,
  RequestEvent,
  RequestReceived,
  refusedData,
} from '@hcp/domain';
import { DomainEventCodec, EventStore, StreamAppend } from '@hcp/eventstore';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { EVENT_STORE } from '../../platform/tokens';

/** A recorded request, to record its answer on the same stream. */
export interface RecordedRequest {
  streamId: string;
  received: RequestReceived['data'];
}

/** How a recorded request was answered. */
export interface RequestOutcome {
  status: number;
  error_code: string | null;
  job_id: string | null;
}

/**
 * A request whose record its command handler commits with its own events: RequestReceived and
 * RequestAnswered (202 and the job) in the command's appendMany, so an accepted request costs no write of
 * its own and is never accepted unrecorded. The handler finds it in its command's RequestContext
 * (`carried`); when it did not commit it (it failed, or took a path without the record), the interceptor
 * records the request after the handler.
 */
export class CarriedRequest {
  private committedJob: string | null = null;

  constructor(
    readonly request: RecordedRequest,
    /** When the request came in: its RequestReceived's time, however late the record is written. */
    readonly receivedAt: Date,
    private readonly appendOf: (jobId: string) => StreamAppend,
  ) {}

  /** The record of this request accepted with its job; the same event ids every time it is asked. */
  acceptedRecord(jobId: string): StreamAppend {
    return this.appendOf(jobId);
  }

  /** The handler committed `acceptedRecord(jobId)`. */
  committed(jobId: string): void {
    this.committedJob = jobId;
  }

  get committedJobId(): string | null {
    return this.committedJob;
  }
}

/**
 * A request whose route carries its record to the handler. The record rides on the request object, and
 * the controller puts it in the command's RequestContext: an explicit dependency of the handler, not
 * ambient state in an AsyncLocalStorage.
 */
export type CarryingRequest = { carried?: CarriedRequest };

/**
 * Appends the request facts the audit trail is built from. Each request gets a stream of its own, so
 * recording never contends with anything else. What the client sent is recorded only through the
 * domain's sanitising rules (request-facts.ts): route and bounded identifiers, never the raw URL.
 */
@Injectable()
export class RequestRecorder {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
  ) {}

  async received(facts: ReceivedFacts, traceId: string): Promise<RecordedRequest> {
    const received = receivedData(facts);
    const id = randomUUID();
    const streamId = `${REQUEST_STREAM_PREFIX}${id}`;
    await this.append(
      streamId,
      { type: 'RequestReceived', version: REQUEST_EVENT_VERSIONS.RequestReceived, data: received },
      received.actor,
      traceId,
      id,
      'no_stream',
    );
    return { streamId, received };
  }

  /** A request to be recorded by its handler's commit, or after it (`recordedAfter`); nothing written yet. */
  carry(facts: ReceivedFacts, traceId: string): CarriedRequest {
    const received = receivedData(facts);
    const id = randomUUID();
    const answeredId = randomUUID();
    const request: RecordedRequest = { streamId: `${REQUEST_STREAM_PREFIX}${id}`, received };
    const receivedAt = new Date();
    const context = eventContext(received.actor, traceId, receivedAt);
    // Stamped once, on the first commit attempt: a retried commit repeats the same events exactly.
    let answered: EventContext | undefined;
    const answeredAt = () => {
      answered ??= answeredContext(received.actor, traceId, receivedAt);
      return answered;
    };
    return new CarriedRequest(request, receivedAt, (jobId) => ({
      streamId: request.streamId,
      events: [
        this.codec.encode(
          { type: 'RequestReceived', version: REQUEST_EVENT_VERSIONS.RequestReceived, data: received },
          context,
          id,
        ),
        this.codec.encode(
          this.answeredEvent(request, { status: 202, error_code: null, job_id: jobId }),
          answeredAt(),
          answeredId,
        ),
      ],
      expected: 'no_stream',
    }));
  }

  /** Records a carried request its handler did not commit: both events at once, with the outcome. */
  async recordedAfter(request: CarriedRequest, outcome: RequestOutcome, traceId: string): Promise<void> {
    const { streamId, received } = request.request;
    const context = eventContext(received.actor, traceId, request.receivedAt);
    await this.store.append(
      streamId,
      [
        this.codec.encode(
          { type: 'RequestReceived', version: REQUEST_EVENT_VERSIONS.RequestReceived, data: received },
          context,
          streamId.slice(REQUEST_STREAM_PREFIX.length),
        ),
        this.codec.encode(
          this.answeredEvent(request.request, outcome),
          answeredContext(received.actor, traceId, request.receivedAt),
        ),
      ],
      'no_stream',
    );
  }

  /** The outcome, right after the RequestReceived of the same request (the second event of its stream). */
  answered(request: RecordedRequest, outcome: RequestOutcome, traceId: string): Promise<void> {
    const { actor } = request.received;
    return this.append(request.streamId, this.answeredEvent(request, outcome), actor, traceId, randomUUID(), 0n);
  }

  private answeredEvent(request: RecordedRequest, outcome: RequestOutcome): RequestAnswered {
    const { actor, action, method, route, scope, project_id, target } = request.received;
    const data: RequestAnswered['data'] = {
      actor,
      action,
      method,
      route,
      scope,
      project_id,
      target,
      status: outcome.status,
      error_code: outcome.error_code,
      job_id: outcome.job_id,
    };
    return { type: 'RequestAnswered', version: REQUEST_EVENT_VERSIONS.RequestAnswered, data };
  }

  /** Records a refusal; the URL and project id it is given are sanitised here, whoever calls it. */
  refused(data: RefusalFacts, traceId: string): Promise<void> {
    const refused = refusedData(data);
    const id = randomUUID();
    return this.append(
      `${REQUEST_STREAM_PREFIX}${id}`,
      { type: 'RequestRefused', version: REQUEST_EVENT_VERSIONS.RequestRefused, data: refused },
      refused.actor ?? 'anonymous',
      traceId,
      id,
      'no_stream',
    );
  }

  private async append(
    streamId: string,
    event: RequestEvent,
    actor: string,
    traceId: string,
    eventId: string,
    expected: 'no_stream' | bigint,
  ): Promise<void> {
    await this.store.append(streamId, [this.codec.encode(event, eventContext(actor, traceId), eventId)], expected);
  }
}

/**
 * The answer's own moment, and never the millisecond of its receipt: the audit trail orders records by
 * time, and a request's two records written in one append must still read received, then answered.
 */
function answeredContext(actor: string, traceId: string, receivedAt: Date): EventContext {
  return eventContext(actor, traceId, new Date(Math.max(Date.now(), receivedAt.getTime() + 1)));
}
