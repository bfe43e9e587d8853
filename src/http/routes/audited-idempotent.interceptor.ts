import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { defer, Observable } from 'rxjs';
import { IdempotencyInterceptor } from '../idempotency/idempotency.interceptor';
import { IdempotencyStore } from '../idempotency/idempotency-store';
import { RequestAuditInterceptor } from '../request/request-audit.interceptor';
import { RequestRecorder } from '../request/request-recorder';

/**
 * The two steps of every job-starting route, in their order, as one Nest interceptor: the request is
 * recorded for the audit trail, then deduplicated by its Idempotency-Key. Nest runs each interceptor of
 * a route behind an `AsyncResource.bind` and an rxjs `defer` of its own per request, and on Node 20 each
 * bind builds two deprecation wrappers (`deprecate` was 3 % of an API process's CPU in a write run); these
 * two always run together, so chaining them here costs that once per create, start, stop, reboot and
 * delete instead of twice. The idempotency step runs when the audit step subscribes to what follows it,
 * in the async context it subscribes from (inside the carried request, for the VM routes), as it did
 * as Nest's next interceptor.
 */
@Injectable()
export class AuditedIdempotentInterceptor implements NestInterceptor {
  private readonly audit: RequestAuditInterceptor;
  private readonly idempotency: IdempotencyInterceptor;

  constructor(recorder: RequestRecorder, store: IdempotencyStore) {
    this.audit = new RequestAuditInterceptor(recorder);
    this.idempotency = new IdempotencyInterceptor(store);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return this.audit.intercept(context, { handle: () => defer(() => this.idempotency.intercept(context, next)) });
  }
}
