import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { from, Observable } from 'rxjs';
import { mergeMap } from 'rxjs/operators';
import { Principal, ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { RequestRecorder } from './request-recorder';
import { traceIdOf } from './request-id';

/**
 * Records every state-changing request and every ops-scope request as a RequestReceived event before
 * its handler runs (after authentication, so the actor is known). If it cannot be recorded, the request
 * fails instead of running unaudited.
 */
@Injectable()
export class RequestAuditInterceptor implements NestInterceptor {
  constructor(private readonly recorder: RequestRecorder) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<Request & { user?: Principal }>();
    const action = routeKey(req.method, (req.route as { path?: string } | undefined)?.path ?? '');
    const policy = ROUTE_POLICIES[action];
    const ops = policy?.scope === 'ops';
    if (!req.user || (req.method === 'GET' && !ops)) return next.handle();
    const target = Object.fromEntries(Object.entries(req.params).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >;
    const received = this.recorder.received(
      {
        actor: req.user.sub,
        action,
        method: req.method,
        path: req.originalUrl,
        scope: ops ? 'ops' : 'tenant',
        project_id: target.project_id ?? null,
        target,
      },
      traceIdOf(req),
    );
    return from(received).pipe(mergeMap(() => next.handle()));
  }
}
