import 'reflect-metadata';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { INTERNAL_PATH_PREFIX, INTERNAL_ROUTE_POLICIES, ROUTE_POLICIES } from '@hcp/auth';
import { appControllers } from './app.module';
import { RequestAuditInterceptor } from './http/request/request-audit.interceptor';
import { declaredRoutes as declared } from './http/routes/declared-routes';
import { AuditedIdempotentInterceptor } from './http/routes/audited-idempotent.interceptor';
import { bindRequestInterceptors } from './http/routes/request-interceptors';

/** Every route the controllers declare, as `METHOD /path` the way Express reports `req.route.path`. */
function declaredRoutes(): string[] {
  return declared(appControllers())
    .map((r) => r.key)
    .sort();
}

describe('route policy table', () => {
  it('has a policy for every route a controller declares, in the public or the internal table', () => {
    const missing = declaredRoutes().filter((r) => !ROUTE_POLICIES[r] && !INTERNAL_ROUTE_POLICIES[r]);
    expect(missing).toEqual([]);
  });

  it('lists no route that no controller serves', () => {
    const declared = new Set(declaredRoutes());
    const listed = [...Object.keys(ROUTE_POLICIES), ...Object.keys(INTERNAL_ROUTE_POLICIES)];
    expect(listed.filter((r) => !declared.has(r))).toEqual([]);
  });

  it('keeps the internal router apart: internal routes only in the internal table, and only there', () => {
    const internal = (r: string) => r.split(' ')[1]!.startsWith(INTERNAL_PATH_PREFIX);
    expect(Object.keys(ROUTE_POLICIES).filter(internal)).toEqual([]);
    expect(Object.keys(INTERNAL_ROUTE_POLICIES).filter((r) => !internal(r))).toEqual([]);
    expect(declaredRoutes().filter((r) => internal(r) && !INTERNAL_ROUTE_POLICIES[r])).toEqual([]);
  });

  it('marks every job-starting route as taking an Idempotency-Key, and only POST and DELETE', () => {
    for (const [route, policy] of Object.entries(ROUTE_POLICIES)) {
      if ('starts_job' in policy && policy.starts_job) expect(route).toMatch(/^(POST|DELETE) /);
    }
  });
});

describe('interceptors per route', () => {
  const bound = () => {
    bindRequestInterceptors(appControllers());
    return new Map(
      declared(appControllers()).map((r) => [r.key, Reflect.getMetadata(INTERCEPTORS_METADATA, r.handler) ?? []]),
    );
  };

  it('records every public route that changes something, and every ops route, read or write', () => {
    for (const [route, interceptors] of bound()) {
      const policy = ROUTE_POLICIES[route];
      const audited = policy !== undefined && (!route.startsWith('GET ') || policy.scope === 'ops');
      const recorded =
        interceptors.includes(RequestAuditInterceptor) || interceptors.includes(AuditedIdempotentInterceptor);
      expect([route, recorded]).toEqual([route, audited]);
    }
    expect(bound().get('POST /v1/projects/:project_id/vms')).toEqual([AuditedIdempotentInterceptor]);
    expect(bound().get('GET /v1/ops/audit')).toEqual([RequestAuditInterceptor]);
  });

  it('deduplicates by Idempotency-Key exactly the job-starting routes, after recording them', () => {
    for (const [route, interceptors] of bound()) {
      const policy = ROUTE_POLICIES[route];
      const startsJob = policy !== undefined && 'starts_job' in policy && policy.starts_job === true;
      expect([route, interceptors.includes(AuditedIdempotentInterceptor)]).toEqual([route, startsJob]);
      if (startsJob) expect(interceptors).toEqual([AuditedIdempotentInterceptor]);
    }
  });

  it("runs none on tenant reads, health, metrics and the host agents' routes", () => {
    const bare = [
      'GET /v1/projects/:project_id/vms/:vm_id',
      'GET /v1/projects/:project_id/vms',
      ...[...bound().keys()].filter((r) => !ROUTE_POLICIES[r]),
    ];
    for (const route of bare) expect([route, bound().get(route)]).toEqual([route, []]);
  });

  it('binds them once when the application is assembled twice in one process', () => {
    bindRequestInterceptors(appControllers());
    expect(bound().get('POST /v1/projects/:project_id/vms')).toEqual([AuditedIdempotentInterceptor]);
  });
});
