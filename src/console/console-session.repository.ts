import { Inject, Injectable } from '@nestjs/common';
import { ConsoleSessionEvent, ConsoleSessionState, consoleSessionStreamId, evolveConsoleSession } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository } from '../platform/event-sourcing/aggregate-repository';
import { EVENT_STORE } from '../platform/tokens';

/** Console sessions live in the event store, so any HCP instance can take a session's one connection. */
@Injectable()
export class ConsoleSessionRepository extends AggregateRepository<ConsoleSessionState, ConsoleSessionEvent> {
  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    // Sessions are short-lived and read once or twice: a small fold cache is plenty.
    super(store, codec, consoleSessionStreamId, evolveConsoleSession, 1_000);
  }
}
