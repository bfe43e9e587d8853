import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail, ThrottlerModuleOptions } from '@nestjs/throttler';
import type { HttpReply as Response, HttpRequest as Request } from '../edge/http-types';
import { HcpError } from '@hcp/domain';
import type { Principal } from '@hcp/auth';
import { SlidingWindowThrottlerStorage } from './sliding-window-storage';

type LimitedRequest = Request & { user?: Principal };

/**
 * Two budgets per window: one per actor (a token's `sub`) and one per project (all its members
 * together), so neither a runaway script nor a busy project starves the others. Runs after the access
 * guard (it needs the verified actor); unauthenticated routes (health) are not limited.
 */
export function rateLimits(perActorPerMinute: number, perProjectPerMinute: number): ThrottlerModuleOptions {
  const anonymous = (context: ExecutionContext) => !context.switchToHttp().getRequest<LimitedRequest>().user;
  return {
    // Two numbers per key instead of one timestamp per hit: O(1) per request at any limit.
    storage: new SlidingWindowThrottlerStorage(),
    // One budget across all routes, not one per route (the library's default key includes the handler).
    generateKey: (_context, tracker) => tracker,
    throttlers: [
      {
        name: 'actor',
        ttl: 60_000,
        limit: perActorPerMinute,
        skipIf: anonymous,
        getTracker: (req: Record<string, unknown>) => `actor:${(req as unknown as LimitedRequest).user?.sub}`,
      },
      {
        name: 'project',
        ttl: 60_000,
        limit: perProjectPerMinute,
        skipIf: (context) =>
          anonymous(context) ||
          typeof context.switchToHttp().getRequest<LimitedRequest>().params.project_id !== 'string',
        getTracker: (req: Record<string, unknown>) => `project:${(req as unknown as LimitedRequest).params.project_id}`,
      },
    ],
  };
}

@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override async throwThrottlingException(
    context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    const res = context.switchToHttp().getResponse<Response>();
    res.header('Retry-After', String(Math.max(1, Math.ceil(detail.timeToBlockExpire))));
    throw new HcpError('RATE_LIMITED', 'too many requests; retry after the time in Retry-After', {
      limit: detail.tracker.startsWith('project:') ? 'project' : 'actor',
    });
  }
}
