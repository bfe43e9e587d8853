import { CanActivate, createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import { AuthGuard } from '@nestjs/passport';
import type { HttpRequest as Request } from '../edge/http-types';
import { routePatternOf, headerOf } from '../edge/http-types';
import { AccessGrant, decideAccess, INTERNAL_ROUTE_POLICIES, Principal, ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { HcpError } from '@hcp/domain';
import { BreakGlassRecorder } from './break-glass.recorder';
import { traceIdOf } from '../request/request-id';

type AuthorizedRequest = Request & { user?: Principal; accessGrant?: AccessGrant; accessRefused?: boolean };

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
    const key = routeKey(policyMethod(req.method), routePatternOf(req));
    // The internal router has its own guard (src/hosts: host credentials, bootstrap tokens); a JWT means
    // nothing there, and no internal route is in ROUTE_POLICIES, so a host credential means nothing here.
    if (INTERNAL_ROUTE_POLICIES[key]) return true;
    const policy = ROUTE_POLICIES[key];
    if (policy?.scope === 'public') return true;
    if (policy) await super.canActivate(context);
    const projectId = typeof req.params.project_id === 'string' ? req.params.project_id : undefined;
    let grant: AccessGrant;
    try {
      grant = decideAccess(policy, req.user ?? null, {
        projectId,
        breakGlassReason: headerOf(req, 'x-break-glass-reason'),
      });
    } catch (err) {
      req.accessRefused = true; // so the NOT_FOUND hiding a project is audited as the refusal it is
      throw err;
    }
    if (grant.via === 'break_glass') {
      await this.breakGlass.record(
        req.user!,
        { reason: grant.reason, method: req.method, path: req.originalUrl, projectId: projectId ?? null },
        traceIdOf(req),
      );
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

/** HEAD is answered by the GET route (Fastify adds a HEAD route to each GET), so it follows its policy. */
export const policyMethod = (method: string): string => (method === 'HEAD' ? 'GET' : method);
