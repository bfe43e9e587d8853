import { CanActivate, createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import type { HttpReply as Response, HttpRequest as Request } from '../../http/edge/http-types';
import { routePatternOf, headerOf } from '../../http/edge/http-types';
import { INTERNAL_ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { HcpError } from '@hcp/domain';
import type { HostPrincipal } from '@hcp/host-protocol';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { HostCredentials } from '../credentials/host-credentials';
import { InternalRateLimits } from './internal-rate-limits';

export type HostRequest = Request & { hostPrincipal?: HostPrincipal };

const BEARER = /^Bearer ([\x21-\x7e]{1,4096})$/;

/**
 * The internal router's guard: on every route of INTERNAL_ROUTE_POLICIES it verifies the host credential
 * (by digest, see HostCredentials) and attaches the HostPrincipal, or, on enroll, only takes the
 * address's budget (the token in the body is the credential, checked by the enrollment). Registered for
 * every route (it passes public ones by: the access guard decides those); controllers may also name it
 * in @UseGuards, which then costs nothing more.
 */
@Injectable()
export class HostGuard implements CanActivate {
  constructor(
    private readonly credentials: HostCredentials,
    private readonly limits: InternalRateLimits,
    private readonly metrics: HcpMetrics,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const req = context.switchToHttp().getRequest<HostRequest>();
    const policy = INTERNAL_ROUTE_POLICIES[routeKey(req.method, routePatternOf(req))];
    // Synchronous for the tenants' routes, which pass here on every request.
    if (!policy || req.hostPrincipal) return true;
    return this.verify(req, context.switchToHttp().getResponse<Response>(), policy);
  }

  private async verify(
    req: HostRequest,
    res: Response,
    policy: (typeof INTERNAL_ROUTE_POLICIES)[string],
  ): Promise<boolean> {
    if (policy.auth === 'bootstrap_token') {
      await this.counted(this.limits.enroll(req.ip ?? 'unknown', res));
      return true;
    }
    const credential = BEARER.exec(headerOf(req, 'authorization') ?? '')?.[1];
    if (!credential) return this.refuse('missing');
    const check = await this.credentials.check(credential);
    if (!check.ok) return this.refuse(check.reason);
    await this.counted(this.limits.host(check.principal.host_id, res));
    req.hostPrincipal = check.principal;
    return true;
  }

  /** One answer for every failed check: whoever holds no valid credential learns nothing more. */
  private refuse(reason: 'missing' | 'unknown' | 'revoked'): never {
    this.metrics.internalAuthRefusals.inc({ reason });
    throw new HcpError('UNAUTHORIZED', 'a valid host credential is required');
  }

  private async counted(taken: Promise<void>): Promise<void> {
    try {
      await taken;
    } catch (err) {
      this.metrics.internalAuthRefusals.inc({ reason: 'rate_limited' });
      throw err;
    }
  }
}

/** The verified host of an internal route's request (set by HostGuard). */
export const CurrentHost = createParamDecorator((_data: unknown, ctx: ExecutionContext): HostPrincipal => {
  const host = ctx.switchToHttp().getRequest<HostRequest>().hostPrincipal;
  // Only reachable on a route missing from INTERNAL_ROUTE_POLICIES: a bug, not a client's fault.
  if (!host) throw new HcpError('INTERNAL_ERROR', 'no host principal on this request');
  return host;
});
