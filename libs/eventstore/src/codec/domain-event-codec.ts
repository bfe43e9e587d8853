import { randomUUID } from 'node:crypto';
import { createHcpEventSchemas, DomainEvent, EventContext, EventSchemaRegistry, UpcasterRegistry } from '@hcp/domain';
import { NewEvent, RecordedEvent } from '../event-store.port';
import { CheckedEventIds } from './checked-event-ids';

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

/**
 * Maps domain events to stored events and back; the only place that knows the metadata layout. Both ways
 * go through the events' schemas: `encode` refuses data its type's schema does not accept (a writer's bug,
 * EventSchemaViolation, INTERNAL_ERROR) so nothing malformed is appended, and `decode` checks what it reads
 * after upcasting, so a malformed stored event fails where its reader can dead-letter it. An event is
 * checked once per process (CheckedEventIds): one this process encoded, or decoded before, is not again.
 */
export class DomainEventCodec {
  constructor(
    private readonly upcasters: UpcasterRegistry,
    private readonly schemas: EventSchemaRegistry = createHcpEventSchemas(),
    private readonly checked = new CheckedEventIds(),
  ) {}

  encode(event: DomainEvent, context: EventContext, id: string = randomUUID()): NewEvent {
    this.schemas.check(event);
    this.checked.add(id);
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
    if (!this.checked.has(recorded.id)) {
      this.schemas.check(event);
      this.checked.add(recorded.id);
    }
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
