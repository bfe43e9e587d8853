import { Inject, Injectable } from '@nestjs/common';
import { evolveOrphan, OrphanEvent, OrphanState, orphanStreamId } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository } from '../platform/event-sourcing/aggregate-repository';
import { nameBasedId } from '../platform/event-sourcing/name-based-id';
import { EVENT_STORE } from '../platform/tokens';

/** The id of the orphan a resource of `clusterId` with this HCP id is: every scan finds the same stream. */
export const orphanIdOf = (clusterId: string, hcpId: string): string => nameBasedId('hcp-orphan', clusterId, hcpId);

@Injectable()
export class OrphanRepository extends AggregateRepository<OrphanState, OrphanEvent> {
  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    super(store, codec, orphanStreamId, evolveOrphan);
  }
}
