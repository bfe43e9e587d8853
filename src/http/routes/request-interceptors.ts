import { NestInterceptor, Type } from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { ROUTE_POLICIES } from '@hcp/auth';
import { RequestAuditInterceptor } from '../request/request-audit.interceptor';
import { AuditedIdempotentInterceptor } from './audited-idempotent.interceptor';
import { declaredRoutes } from './declared-routes';

/**
 * The interceptors a route runs: the request is recorded for the audit trail (every public route that
 * changes something, and every ops route), and on the job-starting routes (all of them POST or DELETE,
 * so all recorded) then deduplicated by its Idempotency-Key, both steps in one interceptor
 * (AuditedIdempotentInterceptor). Tenant reads, health, metrics and the host agents' internal routes run
 * none.
 */
export function requestInterceptorsFor(key: string): Array<Type<NestInterceptor>> {
  const policy = ROUTE_POLICIES[key];
  if (!policy) return [];
  const audited = !key.startsWith('GET ') || policy.scope === 'ops';
  const idempotent = 'starts_job' in policy && policy.starts_job === true;
  if (idempotent) return [AuditedIdempotentInterceptor];
  return audited ? [RequestAuditInterceptor] : [];
}

/**
 * Binds each route's interceptors (requestInterceptorsFor) to its handler, as `@UseInterceptors` would,
 * before Nest reads the controllers. Not global interceptors: Nest wraps every interceptor of a route in
 * an rxjs pipeline and an AsyncResource per request even when it only passes the request on, and a
 * route without any skips that machinery (a tenant GET's CPU, bench/README.md). Idempotent: an
 * application assembled twice in one process binds them once.
 */
export function bindRequestInterceptors(controllers: readonly Type[]): void {
  for (const { key, handler } of declaredRoutes(controllers)) {
    const wanted = requestInterceptorsFor(key);
    const bound: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? [];
    if (wanted.every((interceptor) => bound.includes(interceptor))) continue;
    const others = bound.filter((interceptor) => !wanted.includes(interceptor as Type<NestInterceptor>));
    Reflect.defineMetadata(INTERCEPTORS_METADATA, [...wanted, ...others], handler);
  }
}
