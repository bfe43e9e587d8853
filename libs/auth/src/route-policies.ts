import { OpsRole, TenantRole } from './principal';

/**
 * Who may call what: the one declarative table of HCP's authorization (API.md's role tables). Keys are
 * `METHOD path` exactly as the router declares the route. The guard refuses any route missing here,
 * and a test fails the build when a controller declares a route this table does not list.
 */
export type RoutePolicy =
  | { scope: 'public' }
  /** Tenant scope: a role in the route's `project_id`. `starts_job` routes take an Idempotency-Key. */
  | { scope: 'project'; role: TenantRole; starts_job?: boolean }
  /** Tenant scope without a project in the path (the shared catalog): any project binding. */
  | { scope: 'any_project' }
  /** Ops scope: any of these ops roles. */
  | { scope: 'ops'; roles: readonly OpsRole[]; starts_job?: boolean };

const viewer: RoutePolicy = { scope: 'project', role: 'viewer' };
const operatorJob: RoutePolicy = { scope: 'project', role: 'operator', starts_job: true };
const adminJob: RoutePolicy = { scope: 'project', role: 'admin', starts_job: true };
const catalog: RoutePolicy = { scope: 'any_project' };
const publicRoute: RoutePolicy = { scope: 'public' };

export const ROUTE_POLICIES: Readonly<Record<string, RoutePolicy>> = {
  'GET /health/live': publicRoute,
  'GET /health/ready': publicRoute,

  'GET /v1/zones': catalog,
  'GET /v1/images': catalog,
  'GET /v1/images/:id': catalog,
  'GET /v1/flavors': catalog,
  'GET /v1/flavors/:id': catalog,

  'GET /v1/projects/:project_id/vms': viewer,
  'POST /v1/projects/:project_id/vms': adminJob,
  'GET /v1/projects/:project_id/vms/:vm_id': viewer,
  'PATCH /v1/projects/:project_id/vms/:vm_id': { scope: 'project', role: 'admin' },
  'DELETE /v1/projects/:project_id/vms/:vm_id': adminJob,
  'POST /v1/projects/:project_id/vms/:vm_id/actions/start': operatorJob,
  'POST /v1/projects/:project_id/vms/:vm_id/actions/stop': operatorJob,
  'POST /v1/projects/:project_id/vms/:vm_id/actions/reboot': operatorJob,
  'GET /v1/projects/:project_id/jobs': viewer,
  'GET /v1/projects/:project_id/jobs/:job_id': viewer,
};

export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}
