import { Inject, Injectable } from '@nestjs/common';
import type { HttpReply as Response } from '../../http/edge/http-types';
import type { HcpConfig } from '../../config/hcp-config';
import { refuseOverBudget } from '../../http/rate-limit/over-budget';
import { SlidingWindowLimiter } from '../../http/rate-limit/sliding-window-limiter';
import { HCP_CONFIG } from '../../platform/tokens';

const MINUTE_MS = 60_000;

/**
 * The internal router's budgets, apart from the public API's: per host (a looping agent cannot starve the
 * others, nor the tenants), and per client address for enrollment, the one route without a credential.
 */
@Injectable()
export class InternalRateLimits {
  private readonly limiter = new SlidingWindowLimiter();

  constructor(@Inject(HCP_CONFIG) private readonly config: HcpConfig) {}

  host(hostId: string, res: Response): Promise<void> {
    return this.take('host', hostId, this.config.hosts.perHostPerMinute, res);
  }

  enroll(address: string, res: Response): Promise<void> {
    return this.take('enroll', address, this.config.hosts.enrollPerAddressPerMinute, res);
  }

  private async take(limit: 'host' | 'enroll', key: string, perMinute: number, res: Response): Promise<void> {
    const hit = this.limiter.hit(key, MINUTE_MS, perMinute, 0, `internal-${limit}`);
    if (hit.isBlocked) refuseOverBudget(res, hit, limit);
  }
}
