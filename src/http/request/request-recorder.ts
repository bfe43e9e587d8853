import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
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
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
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

  /** The outcome, right after the RequestReceived of the same request (the second event of its stream). */
  answered(request: RecordedRequest, outcome: RequestOutcome, traceId: string): Promise<void> {
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
    return this.append(
      request.streamId,
      { type: 'RequestAnswered', version: REQUEST_EVENT_VERSIONS.RequestAnswered, data },
      actor,
      traceId,
      randomUUID(),
      0n,
    );
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
