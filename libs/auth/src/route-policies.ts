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
const infraRead: RoutePolicy = { scope: 'ops', roles: ['infra-admin', 'cloud-operator'] };
const infraWrite: RoutePolicy = { scope: 'ops', roles: ['infra-admin'] };
const cloudOperator: RoutePolicy = { scope: 'ops', roles: ['cloud-operator'] };

export const ROUTE_POLICIES: Readonly<Record<string, RoutePolicy>> = {
  'GET /health/live': publicRoute,
  'GET /health/ready': publicRoute,
  'GET /metrics': publicRoute,
  // The webconsole page holds no data; the single-use token in its URL fragment opens the console.
  'GET /console/:session_id': publicRoute,

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
  'POST /v1/projects/:project_id/vms/:vm_id/console': { scope: 'project', role: 'operator' },
  'GET /v1/projects/:project_id/jobs': viewer,
  'GET /v1/projects/:project_id/jobs/:job_id': viewer,
  'GET /v1/projects/:project_id/quotas': viewer,

  'POST /v1/ops/providers': infraWrite,
  'GET /v1/ops/providers': infraRead,
  'GET /v1/ops/providers/:id': infraRead,
  'PATCH /v1/ops/providers/:id': infraWrite,
  'DELETE /v1/ops/providers/:id': infraWrite,
  'POST /v1/ops/providers/:id/check': infraRead,
  'POST /v1/ops/clusters': infraWrite,
  'GET /v1/ops/clusters': infraRead,
  'GET /v1/ops/clusters/:id': infraRead,
  'PATCH /v1/ops/clusters/:id': infraWrite,
  'DELETE /v1/ops/clusters/:id': infraWrite,
  // Host agents of agent clusters (libvirt): the enrollment token and the host credentials are ops secrets.
  'POST /v1/ops/clusters/:id/enrollments': infraWrite,
  'GET /v1/ops/hosts': infraWrite,
  'GET /v1/ops/hosts/:id': infraWrite,
  'POST /v1/ops/hosts/:id/revoke': infraWrite,
  'POST /v1/ops/hosts/:id/rotate': infraWrite,
  'POST /v1/ops/zones': cloudOperator,
  'GET /v1/ops/zones': cloudOperator,
  'GET /v1/ops/zones/:id': cloudOperator,
  'PUT /v1/ops/zones/:id': cloudOperator,
  'DELETE /v1/ops/zones/:id': cloudOperator,
  'POST /v1/ops/images': cloudOperator,
  'GET /v1/ops/images': cloudOperator,
  'PATCH /v1/ops/images/:id': cloudOperator,
  'DELETE /v1/ops/images/:id': cloudOperator,
  'POST /v1/ops/flavors': cloudOperator,
  'GET /v1/ops/flavors': cloudOperator,
  'PATCH /v1/ops/flavors/:id': cloudOperator,
  'DELETE /v1/ops/flavors/:id': cloudOperator,
  'PUT /v1/ops/projects/:project_id/quotas': cloudOperator,
  'GET /v1/ops/vms': cloudOperator,
  'POST /v1/ops/vms/:id/reconcile': { scope: 'ops', roles: ['cloud-operator'], starts_job: true },
  'GET /v1/ops/jobs': cloudOperator,
  'POST /v1/ops/jobs/:id/recover': cloudOperator,
  'GET /v1/ops/orphans': infraRead,
  'GET /v1/ops/orphans/:id': infraRead,
  'POST /v1/ops/orphans/:id/adopt': infraWrite,
  'POST /v1/ops/orphans/:id/destroy': { scope: 'ops', roles: ['infra-admin'], starts_job: true },
  'GET /v1/ops/audit': { scope: 'ops', roles: ['security-auditor'] },
  'GET /v1/ops/metering': cloudOperator,
  'GET /v1/ops/usage': cloudOperator,
  'GET /v1/ops/projections': cloudOperator,
  'POST /v1/ops/projections/:name/rebuild': cloudOperator,
  'GET /v1/ops/dead-letters': cloudOperator,
  'POST /v1/ops/dead-letters/:id/retry': cloudOperator,
  'POST /v1/ops/dead-letters/:id/skip': cloudOperator,
};

export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}
