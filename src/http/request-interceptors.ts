import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { defer, Observable } from 'rxjs';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor';
import { RequestAuditInterceptor } from './request/request-audit.interceptor';

/**
 * The request's audit record, then its idempotency, as one global interceptor. Nest wraps every
 * interceptor of a route in an async resource and an observable per request, even for the GETs that
 * both let through untouched; nesting the second in the first here costs a closure instead. Order and
 * behaviour are those of the two registered one after the other.
 */
@Injectable()
export class RequestInterceptors implements NestInterceptor {
  constructor(
    private readonly audit: RequestAuditInterceptor,
    private readonly idempotency: IdempotencyInterceptor,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return this.audit.intercept(context, { handle: () => defer(() => this.idempotency.intercept(context, next)) });
  }
}
