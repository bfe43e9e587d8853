import { HcpError } from '@hcp/domain';
import type { HttpReply as Response } from '../edge/http-types';
import type { WindowHit } from './sliding-window-limiter';

/**
 * The answer to a request over a budget, for every rate limit (the public API's and the internal
 * router's): 429 RATE_LIMITED naming the budget, with Retry-After in whole seconds, at least one.
 */
export function refuseOverBudget(res: Response, hit: WindowHit, limit: string): never {
  res.header('Retry-After', String(Math.max(1, Math.ceil(hit.timeToBlockExpire))));
  throw new HcpError('RATE_LIMITED', 'too many requests; retry after the time in Retry-After', { limit });
}
