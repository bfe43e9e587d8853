import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { HttpReply as Response, HttpRequest as Request } from '../edge/http-types';
import type { Principal } from '@hcp/auth';
import type { HcpConfig } from '../../config/hcp-config';
import { HCP_CONFIG } from '../../platform/tokens';
import { refuseOverBudget } from './over-budget';
import { SlidingWindowLimiter } from './sliding-window-limiter';

type LimitedRequest = Request & { user?: Principal };

type Budget = 'actor' | 'project';

const MINUTE_MS = 60_000;

/**
 * Two budgets per window: one per actor (a token's `sub`) and one per project (all its members
 * together), so neither a runaway script nor a busy project starves the others. One budget across all
 * routes. Runs after the access guard (it needs the verified actor); unauthenticated routes (health)
 * are not limited. A request over a budget is refused 429 RATE_LIMITED with Retry-After, and its key
 * stays refused for a window; others get each budget's `X-RateLimit-{Limit,Remaining,Reset}-<budget>`.
 *
 * Written here rather than @nestjs/throttler's guard, whose per-request work (metadata lookups, a
 * dozen awaited steps, a hash per key) cost a fifth of a VM detail read's throughput (bench/README.md).
 * The counts are per API process, as the library's in-memory storage kept them.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly limiter = new SlidingWindowLimiter();
  private readonly limits: Record<Budget, number>;

  constructor(@Inject(HCP_CONFIG) config: HcpConfig) {
    this.limits = { actor: config.rateLimit.perActorPerMinute, project: config.rateLimit.perProjectPerMinute };
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const req = http.getRequest<LimitedRequest>();
    if (!req.user) return true;
    const res = http.getResponse<Response>();
    this.take('actor', `actor:${req.user.sub}`, res);
    const project = (req.params as Record<string, unknown> | undefined)?.project_id;
    if (typeof project === 'string') this.take('project', `project:${project}`, res);
    return true;
  }

  private take(budget: Budget, key: string, res: Response): void {
    const limit = this.limits[budget];
    // Blocked for a whole window once over, as the library's default block duration (its ttl) did.
    const hit = this.limiter.hit(key, MINUTE_MS, limit, MINUTE_MS, budget);
    if (hit.isBlocked) refuseOverBudget(res, hit, budget);
    res.header(`X-RateLimit-Limit-${budget}`, String(limit));
    res.header(`X-RateLimit-Remaining-${budget}`, String(Math.max(0, limit - hit.totalHits)));
    res.header(`X-RateLimit-Reset-${budget}`, String(hit.timeToExpire));
  }
}
