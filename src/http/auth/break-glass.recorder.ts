import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  BREAK_GLASS_REASON_MAX,
  BREAK_GLASS_STREAM_PREFIX,
  BreakGlassUsed,
  boundedValue,
  recordedPath,
  recordedProjectId,
  SECURITY_EVENT_VERSIONS,
} from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { Principal } from '@hcp/auth';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { EVENT_STORE } from '../../platform/tokens';

/**
 * Records every break-glass use as an event before the request proceeds: if it cannot be recorded,
 * the request fails rather than running unaudited. What the client sent is bounded first: the path
 * without its query string, the reason header cut to a length, a project id only when it is a valid one.
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
        reason: boundedValue(use.reason, BREAK_GLASS_REASON_MAX),
        method: boundedValue(use.method, 16),
        path: recordedPath(use.path),
        project_id: recordedProjectId(use.projectId).project_id,
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
