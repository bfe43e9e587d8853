import { CanActivate, createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AccessGrant, decideAccess, Principal, ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { HcpError } from '@hcp/domain';
import { BreakGlassRecorder } from '../../security/break-glass.recorder';
import { traceIdOf } from './request-id';

type AuthorizedRequest = Request & { user?: Principal; accessGrant?: AccessGrant };

/**
 * Every request passes here: the route's policy comes from the table in libs/auth, the bearer token is
 * verified by passport, and the decision is libs/auth's `decideAccess`. No controller decides access.
 */
@Injectable()
export class AccessGuard extends AuthGuard('bearer') implements CanActivate {
  constructor(private readonly breakGlass: BreakGlassRecorder) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthorizedRequest>();
    const policy = ROUTE_POLICIES[routeKey(req.method, (req.route as { path?: string } | undefined)?.path ?? '')];
    if (policy?.scope === 'public') return true;
    if (policy) await super.canActivate(context);
    const projectId = typeof req.params.project_id === 'string' ? req.params.project_id : undefined;
    const grant = decideAccess(policy, req.user ?? null, { projectId, breakGlassReason: req.header('x-break-glass-reason') });
    if (grant.via === 'break_glass') {
      await this.breakGlass.record(req.user!, { reason: grant.reason, method: req.method, path: req.originalUrl, projectId: projectId ?? null }, traceIdOf(req));
    }
    req.accessGrant = grant;
    return true;
  }

  /** Any verification failure is the same UNAUTHORIZED, without saying which check failed. */
  override handleRequest<T>(err: unknown, user: T): T {
    if (err || !user) throw new HcpError('UNAUTHORIZED', 'a valid bearer token is required');
    return user;
  }
}

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  return ctx.switchToHttp().getRequest<AuthorizedRequest>().user!;
});
