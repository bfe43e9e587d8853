import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { BREAK_GLASS_STREAM_PREFIX, BreakGlassUsed, SECURITY_EVENT_VERSIONS } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { Principal } from '@hcp/auth';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { EVENT_STORE } from '../../platform/tokens';

/**
 * Records every break-glass use as an event before the request proceeds: if it cannot be recorded,
 * the request fails rather than running unaudited.
 */
@Injectable()
export class BreakGlassRecorder {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
  ) {}

  async record(
    principal: Principal,
    use: { reason: string; method: string; path: string; projectId: string | null },
    traceId: string,
  ): Promise<void> {
    const event: BreakGlassUsed = {
      type: 'BreakGlassUsed',
      version: SECURITY_EVENT_VERSIONS.BreakGlassUsed,
      data: {
        actor: principal.sub,
        reason: use.reason,
        method: use.method,
        path: use.path,
        project_id: use.projectId,
        ops_roles: principal.opsRoles,
      },
    };
    const id = randomUUID();
    await this.store.append(
      `${BREAK_GLASS_STREAM_PREFIX}${id}`,
      [this.codec.encode(event, eventContext(principal.sub, traceId), id)],
      'no_stream',
    );
  }
}
