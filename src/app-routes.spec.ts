import 'reflect-metadata';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { INTERNAL_PATH_PREFIX, INTERNAL_ROUTE_POLICIES, ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { appControllers } from './app.module';

/** Every route the controllers declare, as `METHOD /path` the way Express reports `req.route.path`. */
function declaredRoutes(): string[] {
  const routes: string[] = [];
  for (const controller of appControllers()) {
    const base = Reflect.getMetadata(PATH_METADATA, controller) as string;
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as unknown as Record<string, object>)[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      if (method === undefined || path === undefined) continue;
      const full = `/${[base, path]
        .map((p) => p.replace(/^\/+|\/+$/g, ''))
        .filter(Boolean)
        .join('/')}`;
      routes.push(routeKey(RequestMethod[method], full));
    }
  }
  return routes.sort();
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
