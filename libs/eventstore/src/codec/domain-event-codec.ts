import { randomUUID } from 'node:crypto';
import { DomainEvent, EventContext, UpcasterRegistry } from '@hcp/domain';
import { NewEvent, RecordedEvent } from '../event-store.port';

/** A stored event read back as a domain event at its current version, with when and by whom. */
export interface DecodedEvent<E extends DomainEvent = DomainEvent> {
  event: E;
  /** The stored event's id: stable across replays, the key consumers de-duplicate by. */
  eventId: string;
  streamId: string;
  revision: bigint;
  position: bigint;
  /** When the fact happened (the writer's clock), falling back to the store's record time. */
  at: string;
  context: Partial<EventContext>;
}

/** Maps domain events to stored events and back; the only place that knows the metadata layout. */
export class DomainEventCodec {
  constructor(private readonly upcasters: UpcasterRegistry) {}

  encode(event: DomainEvent, context: EventContext, id: string = randomUUID()): NewEvent {
    return {
      id,
      type: event.type,
      data: event.data as Record<string, unknown>,
      metadata: {
        schema_version: event.version,
        trace_id: context.trace_id,
        actor: context.actor,
        occurred_at: context.occurred_at,
      },
    };
  }

  decode<E extends DomainEvent = DomainEvent>(recorded: RecordedEvent): DecodedEvent<E> {
    const meta = recorded.metadata ?? {};
    const version = typeof meta.schema_version === 'number' ? meta.schema_version : 1;
    const event = this.upcasters.upcast({ type: recorded.type, version, data: recorded.data }) as E;
    const occurred = typeof meta.occurred_at === 'string' ? meta.occurred_at : recorded.recordedAt.toISOString();
    return {
      event,
      eventId: recorded.id,
      streamId: recorded.streamId,
      revision: recorded.revision,
      position: recorded.position,
      at: occurred,
      context: { actor: meta.actor, trace_id: meta.trace_id, occurred_at: occurred },
    };
  }

  /** Whether this release knows the event type (foreign events in a shared store are skipped). */
  knows(recorded: RecordedEvent): boolean {
    return this.upcasters.knows(recorded.type);
  }
}
