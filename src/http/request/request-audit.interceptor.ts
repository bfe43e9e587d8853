import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import type { HttpReply as Response, HttpRequest as Request } from '../edge/http-types';
import { routePatternOf } from '../edge/http-types';
import { from, Observable, throwError } from 'rxjs';
import { catchError, map, mergeMap } from 'rxjs/operators';
import { Principal, ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { HcpError } from '@hcp/domain';
import { CarriedRequest, CarryingRequest, RecordedRequest, RequestOutcome, RequestRecorder } from './request-recorder';
import { traceIdOf } from './request-id';
import { requestLogFields } from './logger-options';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Routes whose handlers commit their request's record with their own events (see CarriedRequest): the
 * VM requests, which open a job in one appendMany. An accepted one is recorded by that commit; one the
 * handler refused, failed or answered without committing anything new (an idempotent retry) is
 * recorded right after it, RequestReceived and RequestAnswered together.
 */
const CARRIED_ROUTES = new Set([
  'POST /v1/projects/:project_id/vms',
  'DELETE /v1/projects/:project_id/vms/:vm_id',
  'POST /v1/projects/:project_id/vms/:vm_id/actions/start',
  'POST /v1/projects/:project_id/vms/:vm_id/actions/stop',
  'POST /v1/projects/:project_id/vms/:vm_id/actions/reboot',
]);

/**
 * Records every state-changing request and every ops-scope request as a RequestReceived event before
 * its handler runs (after authentication, so the actor is known), and how it was answered as a
 * RequestAnswered once the handler is done, so the audit trail has an outcome for each of them. If the
 * request cannot be recorded, it fails instead of running unaudited; an answer that cannot be recorded
 * is logged, and the client still gets it (what the handler did is done). The VM requests are the
 * exception (CARRIED_ROUTES): their handler commits both events with its own, in one transaction.
 */
@Injectable()
export class RequestAuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger('audit');

  constructor(private readonly recorder: RequestRecorder) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<Request & CarryingRequest & { user?: Principal }>();
    const res = context.switchToHttp().getResponse<Response>();
    const route = routePatternOf(req);
    const policy = ROUTE_POLICIES[routeKey(req.method, route)];
    const ops = policy?.scope === 'ops';
    if (!req.user || (req.method === 'GET' && !ops)) return next.handle();
    const traceId = traceIdOf(req);
    const facts = {
      actor: req.user.sub,
      method: req.method,
      route,
      scope: ops ? 'ops' : 'tenant',
      params: req.params,
    } as const;
    if (CARRIED_ROUTES.has(routeKey(req.method, route))) {
      req.carried = this.recorder.carry(facts, traceId);
      return this.carrying(req.carried, next, res, req);
    }
    const received = this.recorder.received(facts, traceId);
    return from(received).pipe(
      mergeMap((recorded) =>
        next.handle().pipe(
          mergeMap((body) =>
            from(this.answer(recorded, { status: res.statusCode, error_code: null, job_id: jobIdOf(body) }, req)).pipe(
              map(() => body),
            ),
          ),
          catchError((err: unknown) => {
            const outcome = { ...failureOf(err), job_id: null };
            return from(this.answer(recorded, outcome, req)).pipe(mergeMap(() => throwError(() => err)));
          }),
        ),
      ),
    );
  }

  private carrying(carried: CarriedRequest, next: CallHandler, res: Response, req: Request): Observable<unknown> {
    return next.handle().pipe(
      mergeMap((body) => {
        const jobId = jobIdOf(body);
        if (jobId !== null && carried.committedJobId === jobId && res.statusCode === 202) return [body];
        const outcome = { status: res.statusCode, error_code: null, job_id: jobId };
        return from(this.recordAfter(carried, outcome, req)).pipe(map(() => body));
      }),
      catchError((err: unknown) => {
        // Committed as accepted: the job exists and runs, whatever failed after; that is what stays recorded.
        if (carried.committedJobId !== null) return throwError(() => err);
        const outcome = { ...failureOf(err), job_id: null };
        return from(this.recordAfter(carried, outcome, req)).pipe(mergeMap(() => throwError(() => err)));
      }),
    );
  }

  private async recordAfter(carried: CarriedRequest, outcome: RequestOutcome, req: Request): Promise<void> {
    try {
      await this.recorder.recordedAfter(carried, outcome, traceIdOf(req));
    } catch (err) {
      this.logger.error({ msg: 'could not record a request', ...requestLogFields(req), err });
    }
  }

  private async answer(recorded: RecordedRequest, outcome: RequestOutcome, req: Request): Promise<void> {
    try {
      await this.recorder.answered(recorded, outcome, traceIdOf(req));
    } catch (err) {
      this.logger.error({ msg: 'could not record the answer to a request', ...requestLogFields(req), err });
    }
  }
}

/**
 * The status and error code a failed request is answered with. Handlers, pipes and guards throw errors
 * of the taxonomy; anything else is a framework error (its own status) or a bug (500, INTERNAL_ERROR,
 * as the exception filter answers it). The filter's own mapping is not used here: http/errors depends
 * on this folder, and folders do not depend on each other both ways.
 */
export function failureOf(err: unknown): { status: number; error_code: string | null } {
  if (err instanceof HcpError) return { status: err.httpStatus, error_code: err.code };
  const e = err as { getStatus?: () => unknown; status?: unknown } | null;
  const given = typeof e?.getStatus === 'function' ? e.getStatus() : e?.status;
  const status = typeof given === 'number' && given >= 400 && given < 600 ? given : 500;
  return { status, error_code: status >= 500 ? 'INTERNAL_ERROR' : null };
}

/** The job a 202 opened, when the answer names one (`{resource_id, job_id}`). */
function jobIdOf(body: unknown): string | null {
  const id = typeof body === 'object' && body !== null ? (body as { job_id?: unknown }).job_id : undefined;
  return typeof id === 'string' && UUID.test(id) ? id : null;
}
