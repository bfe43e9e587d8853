import type { HttpMethod } from './api-md';

/**
 * API.md's routes, transcribed with what its prose says of each: the success status and the error codes
 * it names for that route. Routes come from API.md's tables (the contract test holds this list and the
 * tables to the same routes, both ways, so neither can drift); statuses and codes are read by people
 * from the row, the "Request bodies" list and the conventions, and cited in `source`.
 */
export interface ContractRoute {
  method: HttpMethod;
  /** API.md's path, `{p}` written `{project_id}`. */
  path: string;
  /**
   * The success status API.md gives. `null` where it names none (an ops DELETE, a dead letter's retry):
   * then any one 2xx will do.
   */
  success: number | null;
  /** Other statuses API.md gives the route that are not the error envelope (readiness's 503). */
  otherStatuses?: number[];
  /** Needs no token (API.md "Conventions": `/health/*`, `/metrics`). */
  public?: boolean;
  /** Answers 202 `{ resource_id, job_id }` and honours `Idempotency-Key` (reuse with another body: 409). */
  startsJob?: boolean;
  /** Query parameters API.md names for it: a list's `limit` and `cursor` (Conventions) and its filters. */
  query?: string[];
  /** Error codes API.md names for this route beyond the ones every route of its kind has (contractErrors). */
  errors?: string[];
  source?: string;
}

/** "Lists: `?limit=` (1..200, default 50) and `?cursor=` (opaque)". */
const PAGE = ['limit', 'cursor'];

const GET = 'GET';
const POST = 'POST';
const PUT = 'PUT';
const PATCH = 'PATCH';
const DELETE = 'DELETE';

// "Request bodies" of the ops scope: `→ 201` for providers, clusters, zones, images, flavors; quotas `→ 200`.
// "duplicate name" is one of CONFLICT's cases in the taxonomy.
const opsCreate = (path: string): ContractRoute => ({
  method: POST,
  path,
  success: 201,
  errors: ['CONFLICT'],
  source: 'Request bodies: → 201; CONFLICT: duplicate name',
});

export const API_ROUTES: readonly ContractRoute[] = [
  { method: GET, path: '/health/live', success: 200, public: true, source: 'Health: 200 while the process runs' },
  {
    method: GET,
    path: '/health/ready',
    success: 200,
    otherStatuses: [503],
    public: true,
    source: 'Health: 503 when the datastore, the event store or the schema version is not right',
  },
  { method: GET, path: '/metrics', success: 200, public: true, source: 'Health: Prometheus text' },

  { method: GET, path: '/v1/zones', success: 200 },
  { method: GET, path: '/v1/images', success: 200 },
  { method: GET, path: '/v1/images/{id}', success: 200 },
  { method: GET, path: '/v1/flavors', success: 200 },
  { method: GET, path: '/v1/flavors/{id}', success: 200 },
  {
    method: GET,
    path: '/v1/projects/{project_id}/vms',
    success: 200,
    query: [...PAGE, 'zone', 'status', 'tag', 'name'],
    source: 'list; filters zone, status, tag=key:value, name',
  },
  {
    method: POST,
    path: '/v1/projects/{project_id}/vms',
    success: 202,
    startsJob: true,
    errors: ['QUOTA_EXCEEDED', 'CONFLICT'],
    source: 'QUOTA_EXCEEDED: instances, vCPUs, RAM or disk; CONFLICT: duplicate name',
  },
  { method: GET, path: '/v1/projects/{project_id}/vms/{id}', success: 200 },
  {
    method: PATCH,
    path: '/v1/projects/{project_id}/vms/{id}',
    success: 200,
    errors: ['CONFLICT'],
    source: 'CONFLICT: concurrent change',
  },
  {
    method: POST,
    path: '/v1/projects/{project_id}/vms/{id}/actions/start',
    success: 202,
    startsJob: true,
    errors: ['CONFLICT'],
    source: 'CONFLICT: state does not allow the action (start a deleting VM)',
  },
  {
    method: POST,
    path: '/v1/projects/{project_id}/vms/{id}/actions/stop',
    success: 202,
    startsJob: true,
    errors: ['CONFLICT'],
    source: 'CONFLICT: state does not allow the action',
  },
  {
    method: POST,
    path: '/v1/projects/{project_id}/vms/{id}/actions/reboot',
    success: 202,
    startsJob: true,
    errors: ['CONFLICT', 'FEATURE_NOT_SUPPORTED'],
    source: 'FEATURE_NOT_SUPPORTED: the zone lacks the capability (reboot)',
  },
  {
    method: DELETE,
    path: '/v1/projects/{project_id}/vms/{id}',
    success: 202,
    startsJob: true,
    errors: ['CONFLICT'],
    source: 'CONFLICT: state does not allow the action',
  },
  {
    method: POST,
    path: '/v1/projects/{project_id}/vms/{id}/console',
    success: 201,
    errors: ['FEATURE_NOT_SUPPORTED'],
    source: 'FEATURE_NOT_SUPPORTED: the zone lacks the capability (console type)',
  },
  {
    method: GET,
    path: '/v1/projects/{project_id}/jobs',
    success: 200,
    query: [...PAGE, 'resource_id', 'status'],
    source: 'jobs; filter resource_id, status',
  },
  { method: GET, path: '/v1/projects/{project_id}/jobs/{job_id}', success: 200 },
  { method: GET, path: '/v1/projects/{project_id}/quotas', success: 200 },

  opsCreate('/v1/ops/providers'),
  { method: GET, path: '/v1/ops/providers', success: 200 },
  { method: GET, path: '/v1/ops/providers/{id}', success: 200 },
  { method: PATCH, path: '/v1/ops/providers/{id}', success: 200 },
  { method: DELETE, path: '/v1/ops/providers/{id}', success: null },
  opsCreate('/v1/ops/clusters'),
  { method: GET, path: '/v1/ops/clusters', success: 200 },
  { method: GET, path: '/v1/ops/clusters/{id}', success: 200 },
  { method: PATCH, path: '/v1/ops/clusters/{id}', success: 200 },
  { method: DELETE, path: '/v1/ops/clusters/{id}', success: null },
  opsCreate('/v1/ops/zones'),
  { method: GET, path: '/v1/ops/zones', success: 200 },
  { method: PUT, path: '/v1/ops/zones/{id}', success: 200 },
  { method: DELETE, path: '/v1/ops/zones/{id}', success: null },
  opsCreate('/v1/ops/images'),
  { method: PATCH, path: '/v1/ops/images/{id}', success: 200 },
  { method: DELETE, path: '/v1/ops/images/{id}', success: null },
  opsCreate('/v1/ops/flavors'),
  { method: PATCH, path: '/v1/ops/flavors/{id}', success: 200 },
  { method: DELETE, path: '/v1/ops/flavors/{id}', success: null },
  { method: PUT, path: '/v1/ops/projects/{project_id}/quotas', success: 200, source: 'Request bodies: quotas → 200' },
  { method: GET, path: '/v1/ops/vms', success: 200, query: PAGE },
  {
    method: GET,
    path: '/v1/ops/jobs',
    success: 200,
    query: [...PAGE, 'resource_id'],
    source: 'GET /v1/ops/jobs?resource_id={id}',
  },
  {
    method: GET,
    path: '/v1/ops/audit',
    success: 200,
    query: [...PAGE, 'project', 'actor', 'action', 'target', 'from', 'to'],
    source: 'filters: project, actor, action, target, from, to',
  },
  { method: POST, path: '/v1/ops/projections/{name}/rebuild', success: 202, source: 'rebuild (202)' },
  { method: GET, path: '/v1/ops/projections', success: 200 },
  { method: GET, path: '/v1/ops/dead-letters', success: 200, query: PAGE },
  { method: POST, path: '/v1/ops/dead-letters/{id}/retry', success: null },
  { method: POST, path: '/v1/ops/dead-letters/{id}/skip', success: null },
  {
    method: POST,
    path: '/v1/ops/vms/{id}/reconcile',
    success: 202,
    startsJob: true,
    errors: ['NOT_FOUND'],
    source: '202 {resource_id, job_id}, Idempotency-Key honoured; 404 for a VM HCP does not have',
  },
  {
    method: GET,
    path: '/v1/ops/orphans',
    success: 200,
    query: ['provider_id', 'cluster_id', 'status'],
    source: 'List: filters provider_id, cluster_id, status',
  },
  { method: GET, path: '/v1/ops/orphans/{id}', success: 200 },
  {
    method: POST,
    path: '/v1/ops/orphans/{id}/adopt',
    success: 200,
    errors: ['CONFLICT'],
    source: 'adopt: 200 with the orphan; 409 for an orphan without a VM record ...',
  },
  {
    method: POST,
    path: '/v1/ops/orphans/{id}/destroy',
    success: 202,
    startsJob: true,
    errors: ['CONFLICT'],
    source:
      'destroy: 202 {resource_id, job_id}, Idempotency-Key honoured; refuses with CONFLICT when a live VM owns the id',
  },
  {
    method: POST,
    path: '/v1/ops/jobs/{id}/recover',
    success: 200,
    errors: ['CONFLICT'],
    source: 'recover: 200 with the job; 409 while a worker runs it, ...',
  },
  {
    method: POST,
    path: '/v1/ops/clusters/{id}/enrollments',
    success: 201,
    errors: ['NOT_FOUND', 'FEATURE_NOT_SUPPORTED'],
    source:
      'Enrollment → 201; 404 for a cluster that does not exist, 422 FEATURE_NOT_SUPPORTED for one not run by host agents',
  },
  { method: GET, path: '/v1/ops/hosts', success: 200, query: ['cluster_id'], source: 'Hosts: filter cluster_id' },
  { method: GET, path: '/v1/ops/hosts/{id}', success: 200 },
  { method: POST, path: '/v1/ops/hosts/{id}/revoke', success: 200, source: 'revoke: 200 with the host' },
  {
    method: POST,
    path: '/v1/ops/hosts/{id}/rotate',
    success: 200,
    errors: ['CONFLICT'],
    source: 'rotate: 200 { credential }; 409 for a revoked host or a configured credential',
  },
];

/**
 * Routes HCP serves beyond API.md's tables ("add fields and endpoints freely"), each with why. A route in
 * /openapi.json that is neither in API.md nor here fails the contract test: document it in API.md, or
 * list it here on purpose.
 */
export const EXTENSION_ROUTES: ReadonlyArray<{ method: HttpMethod; path: string; why: string }> = [
  { method: GET, path: '/v1/ops/zones/{id}', why: 'one zone, as the other ops resources have' },
  { method: GET, path: '/v1/ops/images', why: 'the ops view of images, with provider refs' },
  { method: GET, path: '/v1/ops/flavors', why: 'the ops view of flavors' },
  { method: POST, path: '/v1/ops/providers/{id}/check', why: 'checks a provider now (its health)' },
  { method: GET, path: '/v1/ops/metering', why: 'the metering records, as billing reads them' },
  {
    method: GET,
    path: '/v1/ops/usage',
    why: 'usage of a period (VM-, vCPU-, GiB- and powered-off hours) computed from the metering records',
  },
  { method: GET, path: '/console/{session_id}', why: "the webconsole page a console session's url opens" },
];

/**
 * The error codes API.md implies for a route, by its kind, plus the ones it names for the route:
 * - every route but `/health/*` and `/metrics` needs a token (UNAUTHORIZED), a role (FORBIDDEN), may be
 *   rate limited (RATE_LIMITED), may fail (INTERNAL_ERROR: "anything else"), may meet HCP's own
 *   dependencies away or a draining process (PROVIDER_UNAVAILABLE), and takes input that may be
 *   malformed (INVALID_REQUEST: "bad id format", a list's `limit` out of range, an unknown field);
 * - a request body (POST, PUT, PATCH) in another media type: UNSUPPORTED_MEDIA_TYPE;
 * - a resource id in the path, or a tenant's project: NOT_FOUND ("resource absent or not visible to the
 *   caller (never reveal other projects' ids)");
 * - a job-starting route: CONFLICT ("Same key, different body: 409").
 */
export function contractErrors(route: ContractRoute): string[] {
  const codes = new Set(route.errors ?? []);
  if (!route.public) {
    for (const code of ['UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'INTERNAL_ERROR', 'PROVIDER_UNAVAILABLE'])
      codes.add(code);
    codes.add('INVALID_REQUEST');
    if ([POST, PUT, PATCH].includes(route.method)) codes.add('UNSUPPORTED_MEDIA_TYPE');
    if (/\{(?!project_id\})[^}]+\}/.test(route.path) || route.path.startsWith('/v1/projects/')) codes.add('NOT_FOUND');
    if (route.startsJob) codes.add('CONFLICT');
  }
  return [...codes].sort();
}
