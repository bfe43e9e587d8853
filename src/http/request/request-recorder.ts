import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  REQUEST_EVENT_VERSIONS,
  REQUEST_STREAM_PREFIX,
  RequestEvent,
  RequestReceived,
  RequestRefused,
} from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { EVENT_STORE } from '../../platform/tokens';

/**
 * Appends the request facts the audit trail is built from. Each request gets a stream of its own, so
 * recording never contends with anything else.
 */
@Injectable()
export class RequestRecorder {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
  ) {}

  received(data: RequestReceived['data'], traceId: string): Promise<void> {
    return this.append(
      { type: 'RequestReceived', version: REQUEST_EVENT_VERSIONS.RequestReceived, data },
      data.actor,
      traceId,
    );
  }

  refused(data: RequestRefused['data'], traceId: string): Promise<void> {
    return this.append(
      { type: 'RequestRefused', version: REQUEST_EVENT_VERSIONS.RequestRefused, data },
      data.actor ?? 'anonymous',
      traceId,
    );
  }

  private async append(event: RequestEvent, actor: string, traceId: string): Promise<void> {
    const id = randomUUID();
    await this.store.append(
      `${REQUEST_STREAM_PREFIX}${id}`,
      [this.codec.encode(event, eventContext(actor, traceId), id)],
      'no_stream',
    );
  }
}
