import { createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { HcpError } from '@hcp/domain';
import { ACCESS_POLICY, AccessPolicy } from './access-policy';
import { authorizeProject, Principal } from './principal';

/** Authenticates the bearer token (passport 'jwt'), then applies the route's access policy. */
@Injectable()
export class HcpAuthGuard extends AuthGuard('jwt') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const policy = this.reflector.getAllAndOverride<AccessPolicy | undefined>(ACCESS_POLICY, [context.getHandler(), context.getClass()]);
    if (policy?.kind === 'public') return true;
    await super.canActivate(context);
    const request = context.switchToHttp().getRequest<{ user: Principal; params: Record<string, string> }>();
    const principal = request.user;
    switch (policy?.kind) {
      case 'project':
        authorizeProject(principal, request.params.project_id, policy.role);
        return true;
      case 'any_project':
        if (Object.keys(principal.projects).length === 0) throw new HcpError('FORBIDDEN', 'a tenant project binding is required');
        return true;
      default:
        throw new HcpError('FORBIDDEN', 'this route has no access policy');
    }
  }

  /** Any verification failure is UNAUTHORIZED, without saying which check failed. */
  override handleRequest<T>(err: unknown, user: T): T {
    if (err || !user) throw new HcpError('UNAUTHORIZED', 'a valid bearer token is required');
    return user;
  }
}

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  return ctx.switchToHttp().getRequest<{ user: Principal }>().user;
});
