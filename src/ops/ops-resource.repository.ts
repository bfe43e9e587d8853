import { Inject, Injectable } from '@nestjs/common';
import {
  decideOpsResource,
  EventContext,
  evolveOpsResource,
  OpsCommand,
  OpsKind,
  OpsResourceEvent,
  OpsResourceState,
  opsStreamId,
} from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository } from '../platform/event-sourcing/aggregate-repository';
import { EVENT_STORE } from '../platform/tokens';

/** The event-sourced ops aggregates (one repository per kind, all alike). */
@Injectable()
export class OpsResourceRepository {
  private readonly byKind = new Map<OpsKind, AggregateRepository<OpsResourceState, OpsResourceEvent>>();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
  ) {}

  /**
   * Decides a command on the resource's stream and appends the outcome; returns the new state. The
   * command is built from the current state (a patch merges into the spec as it is in the stream).
   */
  async execute<K extends OpsKind>(
    kind: K,
    id: string,
    command: (current: OpsResourceState<K> | null) => OpsCommand<K>,
    context: EventContext,
  ): Promise<OpsResourceState<K>> {
    const { state } = await this.of(kind).update(
      id,
      (current) =>
        decideOpsResource(
          kind,
          current as OpsResourceState<K> | null,
          command(current as OpsResourceState<K> | null),
        ) as OpsResourceEvent[],
      context,
    );
    return state as OpsResourceState<K>;
  }

  /** The live resource from its stream (not the read model), or null. */
  async live<K extends OpsKind>(kind: K, id: string): Promise<OpsResourceState<K> | null> {
    const { state } = await this.of(kind).load(id);
    return state && !state.deleted ? (state as OpsResourceState<K>) : null;
  }

  private of(kind: OpsKind): AggregateRepository<OpsResourceState, OpsResourceEvent> {
    let repo = this.byKind.get(kind);
    if (!repo) {
      repo = new AggregateRepository(
        this.store,
        this.codec,
        (id) => opsStreamId(kind, id),
        evolveOpsResource(kind) as never,
      );
      this.byKind.set(kind, repo);
    }
    return repo;
  }
}
