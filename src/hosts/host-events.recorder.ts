import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { HostEvent, hostEnrollmentStreamId, hostStreamId } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { eventContext } from '../platform/event-sourcing/event-context';
import { EVENT_STORE } from '../platform/tokens';

/**
 * Appends the host events the audit trail is built from. The tables (`hosts`, `host_enrollments`) are the
 * state the internal router authenticates against; these events are the record of who changed it.
 */
@Injectable()
export class HostEventsRecorder {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
  ) {}

  async record(event: HostEvent, actor: string, traceId: string): Promise<void> {
    const streamId =
      event.type === 'HostEnrollmentCreated'
        ? hostEnrollmentStreamId(event.data.enrollment_id)
        : hostStreamId(event.data.host_id);
    await this.store.append(streamId, [this.codec.encode(event, eventContext(actor, traceId), randomUUID())], 'any');
  }
}
