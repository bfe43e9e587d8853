import { randomUUID } from 'node:crypto';
import { ROUTE_POLICIES } from '@hcp/auth';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/**
 * Every route of the route table x every role x own project / foreign project / no binding, with the
 * exact status each must answer. The expectations below are written from API.md's role tables, not
 * derived from the code under test, so a wrong policy entry makes this fail.
 */

type Caller =
  | { kind: 'tenant'; role: 'viewer' | 'operator' | 'admin' | 'owner' }
  | { kind: 'ops'; role: 'cloud-operator' | 'infra-admin' | 'security-auditor' }
  | { kind: 'break-glass'; withReason: boolean };
type Relation = 'own' | 'foreign' | 'none';

const CALLERS: Caller[] = [
  { kind: 'tenant', role: 'viewer' },
  { kind: 'tenant', role: 'operator' },
  { kind: 'tenant', role: 'admin' },
  { kind: 'tenant', role: 'owner' },
  { kind: 'ops', role: 'cloud-operator' },
  { kind: 'ops', role: 'infra-admin' },
  { kind: 'ops', role: 'security-auditor' },
  { kind: 'break-glass', withReason: false },
  { kind: 'break-glass', withReason: true },
];
const RELATIONS: Relation[] = ['own', 'foreign', 'none'];
const RANK = { viewer: 0, operator: 1, admin: 2, owner: 3 } as const;

/** API.md's tenant table: the least role per route, and what a permitted call answers. */
const TENANT_ROUTES: Record<string, { least: keyof typeof RANK | 'any'; ok: number; vmState?: 'running' | 'stopped' }> =
  {
    'GET /v1/zones': { least: 'any', ok: 200 },
    'GET /v1/images': { least: 'any', ok: 200 },
    'GET /v1/images/:id': { least: 'any', ok: 200 },
    'GET /v1/flavors': { least: 'any', ok: 200 },
    'GET /v1/flavors/:id': { least: 'any', ok: 200 },
    'GET /v1/projects/:project_id/vms': { least: 'viewer', ok: 200 },
    'POST /v1/projects/:project_id/vms': { least: 'admin', ok: 202 },
    'GET /v1/projects/:project_id/vms/:vm_id': { least: 'viewer', ok: 200 },
    'PATCH /v1/projects/:project_id/vms/:vm_id': { least: 'admin', ok: 200, vmState: 'running' },
    'DELETE /v1/projects/:project_id/vms/:vm_id': { least: 'admin', ok: 202, vmState: 'running' },
    'POST /v1/projects/:project_id/vms/:vm_id/actions/start': { least: 'operator', ok: 202, vmState: 'stopped' },
    'POST /v1/projects/:project_id/vms/:vm_id/actions/stop': { least: 'operator', ok: 202, vmState: 'running' },
    'POST /v1/projects/:project_id/vms/:vm_id/actions/reboot': { least: 'operator', ok: 202, vmState: 'running' },
    'POST /v1/projects/:project_id/vms/:vm_id/console': { least: 'operator', ok: 201 },
    'GET /v1/projects/:project_id/jobs': { least: 'viewer', ok: 200 },
    'GET /v1/projects/:project_id/jobs/:job_id': { least: 'viewer', ok: 200 },
    'GET /v1/projects/:project_id/quotas': { least: 'viewer', ok: 200 },
  };
const PUBLIC_ROUTES = new Set(['GET /health/live', 'GET /health/ready', 'GET /metrics', 'GET /console/:session_id']);

/** API.md's ops table: which ops roles, and what a permitted call answers. */
type OpsRole = 'cloud-operator' | 'infra-admin' | 'security-auditor';
const AUDITOR: OpsRole[] = ['security-auditor'];
const INFRA_READ: OpsRole[] = ['infra-admin', 'cloud-operator'];
const INFRA_WRITE: OpsRole[] = ['infra-admin'];
const CLOUD: OpsRole[] = ['cloud-operator'];
const OPS_ROUTES: Record<string, { roles: OpsRole[]; ok: number }> = {
  'POST /v1/ops/providers': { roles: INFRA_WRITE, ok: 201 },
  'GET /v1/ops/providers': { roles: INFRA_READ, ok: 200 },
  'GET /v1/ops/providers/:id': { roles: INFRA_READ, ok: 200 },
  'PATCH /v1/ops/providers/:id': { roles: INFRA_WRITE, ok: 200 },
  'DELETE /v1/ops/providers/:id': { roles: INFRA_WRITE, ok: 204 },
  'POST /v1/ops/providers/:id/check': { roles: INFRA_READ, ok: 200 },
  'POST /v1/ops/clusters': { roles: INFRA_WRITE, ok: 201 },
  'GET /v1/ops/clusters': { roles: INFRA_READ, ok: 200 },
  'GET /v1/ops/clusters/:id': { roles: INFRA_READ, ok: 200 },
  'PATCH /v1/ops/clusters/:id': { roles: INFRA_WRITE, ok: 200 },
  'DELETE /v1/ops/clusters/:id': { roles: INFRA_WRITE, ok: 204 },
  // The fixture cluster's provider is the simulator, which runs no host agents: a permitted call gets as far
  // as refusing that (host-enrollment.e2e covers the rest); no host has the fixture id.
  'POST /v1/ops/clusters/:id/enrollments': { roles: INFRA_WRITE, ok: 422 },
  'GET /v1/ops/hosts': { roles: INFRA_WRITE, ok: 200 },
  'GET /v1/ops/hosts/:id': { roles: INFRA_WRITE, ok: 404 },
  'POST /v1/ops/hosts/:id/revoke': { roles: INFRA_WRITE, ok: 404 },
  'POST /v1/ops/hosts/:id/rotate': { roles: INFRA_WRITE, ok: 404 },
  'POST /v1/ops/zones': { roles: CLOUD, ok: 201 },
  'GET /v1/ops/zones': { roles: CLOUD, ok: 200 },
  'GET /v1/ops/zones/:id': { roles: CLOUD, ok: 200 },
  'PUT /v1/ops/zones/:id': { roles: CLOUD, ok: 200 },
  'DELETE /v1/ops/zones/:id': { roles: CLOUD, ok: 204 },
  'POST /v1/ops/images': { roles: CLOUD, ok: 201 },
  'GET /v1/ops/images': { roles: CLOUD, ok: 200 },
  'PATCH /v1/ops/images/:id': { roles: CLOUD, ok: 200 },
  'DELETE /v1/ops/images/:id': { roles: CLOUD, ok: 204 },
  'POST /v1/ops/flavors': { roles: CLOUD, ok: 201 },
  'GET /v1/ops/flavors': { roles: CLOUD, ok: 200 },
  'PATCH /v1/ops/flavors/:id': { roles: CLOUD, ok: 200 },
  'DELETE /v1/ops/flavors/:id': { roles: CLOUD, ok: 204 },
  'PUT /v1/ops/projects/:project_id/quotas': { roles: CLOUD, ok: 200 },
  'GET /v1/ops/vms': { roles: CLOUD, ok: 200 },
  'GET /v1/ops/jobs': { roles: CLOUD, ok: 200 },
  // The fixture job does not exist: a permitted recovery gets as far as looking it up (job-recovery.e2e
  // covers the outcomes).
  'POST /v1/ops/jobs/:id/recover': { roles: CLOUD, ok: 404 },
  // No VM has the fixture id: a permitted reconcile gets as far as looking it up (reconcile.e2e covers the rest).
  'POST /v1/ops/vms/:id/reconcile': { roles: CLOUD, ok: 404 },
  // No orphan has the fixture id: a permitted call gets as far as looking it up (orphans.e2e covers the outcomes).
  'GET /v1/ops/orphans': { roles: INFRA_READ, ok: 200 },
  'GET /v1/ops/orphans/:id': { roles: INFRA_READ, ok: 404 },
  'POST /v1/ops/orphans/:id/adopt': { roles: INFRA_WRITE, ok: 404 },
  'POST /v1/ops/orphans/:id/destroy': { roles: INFRA_WRITE, ok: 404 },
  'GET /v1/ops/audit': { roles: AUDITOR, ok: 200 },
  'GET /v1/ops/metering': { roles: CLOUD, ok: 200 },
  // No period in the fixture call: a permitted one gets as far as asking for it (usage-billing.e2e covers answers).
  'GET /v1/ops/usage': { roles: CLOUD, ok: 400 },
  'GET /v1/ops/projections': { roles: CLOUD, ok: 200 },
  'POST /v1/ops/projections/:name/rebuild': { roles: CLOUD, ok: 202 },
  'GET /v1/ops/dead-letters': { roles: CLOUD, ok: 200 },
  'POST /v1/ops/dead-letters/:id/retry': { roles: CLOUD, ok: 200 },
  'POST /v1/ops/dead-letters/:id/skip': { roles: CLOUD, ok: 200 },
};

function expectedStatus(route: string, caller: Caller, relation: Relation): number {
  if (PUBLIC_ROUTES.has(route)) return 200;
  const ops = OPS_ROUTES[route];
  if (ops) {
    if (caller.kind === 'break-glass') return caller.withReason ? ops.ok : 403;
    if (caller.kind === 'tenant') return 403; // a tenant token never reaches /v1/ops
    return ops.roles.includes(caller.role) ? ops.ok : 403;
  }
  const spec = TENANT_ROUTES[route];
  if (!spec) throw new Error(`no expectation written for ${route}: add it to this matrix`);
  if (caller.kind === 'break-glass') return caller.withReason ? spec.ok : 403;
  if (caller.kind === 'ops') return 403; // ops reach tenant paths only as break-glass
  if (spec.least === 'any') return relation === 'none' ? 403 : spec.ok;
  if (relation !== 'own') return 404; // no binding to the route's project: never reveal it exists
  return RANK[caller.role] >= RANK[spec.least] ? spec.ok : 403;
}

describe('authorization matrix', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let admin: ApiClient;
  let choice: { image_id: string; flavor_id: string };
  const fixtures = {
    ownVm: '',
    ownJob: '',
    foreignVm: '',
    foreignJob: '',
    provider: '',
    cluster: '',
    zone: '',
    image: '',
    flavor: '',
    'dead-letter': '',
    job: randomUUID(),
    orphan: randomUUID(),
    vm: randomUUID(),
    host: randomUUID(),
  };
  let opsAdmin: ApiClient;
  let serial = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0',
        HCP_RATE_LIMIT_ACTOR_PER_MINUTE: '1000000',
        HCP_RATE_LIMIT_PROJECT_PER_MINUTE: '1000000',
      },
    });
    admin = new ApiClient(hcp.baseUrl, hcp.token('fixture-admin', { own: 'owner', foreign: 'owner' }));
    choice = await seededChoice(admin);
    const own = await vmIn('own', 'running');
    const foreign = await vmIn('foreign', 'running');
    Object.assign(fixtures, { ownVm: own.vm, ownJob: own.job, foreignVm: foreign.vm, foreignJob: foreign.job });
    opsAdmin = new ApiClient(hcp.baseUrl, hcp.token('fixture-ops', {}, ['infra-admin', 'cloud-operator']));
    fixtures.provider = await freshOps('provider');
    fixtures.cluster = await freshOps('cluster');
    fixtures.zone = await freshOps('zone');
    fixtures.image = await freshOps('image');
    fixtures.flavor = await freshOps('flavor');
    // A dead letter whose event is not in the store: a permitted retry answers 200 and leaves it open.
    fixtures['dead-letter'] = randomUUID();
    await queryDatabase(
      db.url,
      `INSERT INTO projection_dead_letters (id, projection, position, event_id, stream_id, stream_revision, event_type,
         error, attempts, status, first_failed_at, last_failed_at, updated_at)
       VALUES ($1, 'audit', 0, $2, 'request-matrix', 0, 'RequestRefused', 'fixture', 1, 'open', now(), now(), now())`,
      [fixtures['dead-letter'], randomUUID()],
    );
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  async function vmIn(project: string, state: 'running' | 'stopped'): Promise<{ vm: string; job: string }> {
    const res = await admin.post(`/v1/projects/${project}/vms`, {
      name: `fx-${state}`,
      zone: 'local',
      ...choice,
      power_on: state === 'running',
    });
    expect(res.status).toBe(202);
    expect((await jobFinished(admin, project, res.body.job_id)).status).toBe('succeeded');
    await eventually(
      async () =>
        (await admin.get(`/v1/projects/${project}/vms/${res.body.resource_id}`)).body.status === state
          ? true
          : undefined,
      `${state} VM`,
    );
    return { vm: res.body.resource_id, job: res.body.job_id };
  }

  function tokenFor(caller: Caller, relation: Relation): string {
    if (caller.kind === 'tenant') {
      if (relation === 'none') return hcp.token(`t-${caller.role}-none`, {});
      // "foreign": bound (with this role) to a project other than the route's.
      return hcp.token(`t-${caller.role}`, relation === 'own' ? { own: caller.role } : { elsewhere: caller.role });
    }
    return hcp.token(`ops-${caller.kind === 'ops' ? caller.role : 'glass'}`, {}, [
      caller.kind === 'ops' ? caller.role : 'break-glass',
    ]);
  }

  const cases = Object.keys(ROUTE_POLICIES).flatMap((route) =>
    CALLERS.flatMap((caller) => RELATIONS.map((relation) => ({ route, caller, relation }))),
  );

  it('covers every route in the table', () => {
    for (const route of Object.keys(ROUTE_POLICIES))
      expect([route, PUBLIC_ROUTES.has(route) || route in TENANT_ROUTES || route in OPS_ROUTES]).toEqual([route, true]);
    expect(cases.length).toBe(Object.keys(ROUTE_POLICIES).length * CALLERS.length * RELATIONS.length);
  });

  it.each(cases.map((c) => [c.route, describeCaller(c.caller), c.relation, c] as const))(
    '%s as %s, %s project',
    async (route, _who, relation, { caller }) => {
      const expected = expectedStatus(route, caller, relation);
      const [method, pattern] = route.split(' ');
      const { path, body } =
        route in OPS_ROUTES
          ? await opsRequest(route, pattern, expected === OPS_ROUTES[route].ok)
          : await tenantRequest(route, pattern, method, relation, expected);
      const headers: Record<string, string> =
        caller.kind === 'break-glass' && caller.withReason
          ? { 'x-break-glass-reason': 'authorization matrix test' }
          : {};
      const res = await new ApiClient(hcp.baseUrl, tokenFor(caller, relation)).request(method, path, body, headers);
      expect({ route, status: res.status }).toEqual({ route, status: expected });
      if (expected >= 400) expect(res.body.error.trace_id).toBe(res.headers.get('x-request-id'));
    },
  );

  async function tenantRequest(route: string, pattern: string, method: string, relation: Relation, expected: number) {
    const project = relation === 'own' ? 'own' : 'foreign';
    const spec = TENANT_ROUTES[route];
    // A call that will be let through and changes a VM gets a fresh VM in the state it needs.
    let vmId = project === 'own' ? fixtures.ownVm : fixtures.foreignVm;
    if (expected === spec?.ok && spec.vmState) vmId = (await vmIn(project, spec.vmState)).vm;
    const path = pattern
      .replace(':project_id', project)
      .replace(':vm_id', vmId)
      .replace(':job_id', project === 'own' ? fixtures.ownJob : fixtures.foreignJob)
      .replace(':id', route.includes('images') ? choice.image_id : choice.flavor_id)
      .replace(':session_id', randomUUID());
    const body =
      method === 'GET' || method === 'DELETE'
        ? undefined
        : route.endsWith('/vms')
          ? { name: 'matrix', zone: 'local', ...choice }
          : route.endsWith('/console')
            ? { type: 'vnc' }
            : route.startsWith('PATCH')
              ? { tags: { m: 'x' } }
              : {};
    return { path, body };
  }

  /** An ops call: a fresh resource for every permitted change, so each one can succeed on its own. */
  async function opsRequest(route: string, pattern: string, allowed: boolean) {
    const kind = pattern.split('/')[3].replace(/s$/, '') as
      | 'provider'
      | 'cluster'
      | 'zone'
      | 'image'
      | 'flavor'
      | 'vm'
      | 'job'
      | 'orphan'
      | 'host';
    const unique = `m${++serial}`;
    const bodies: Record<string, unknown> = {
      provider: { name: unique, type: 'simulator' },
      cluster: { name: unique, provider_id: fixtures.provider },
      zone: route.startsWith('PUT')
        ? { name: unique, cluster_ids: [fixtures.cluster], policy: 'pack' }
        : { id: unique, name: unique, cluster_ids: [fixtures.cluster], policy: 'spread' },
      image: route.startsWith('PATCH')
        ? { os: 'linux' }
        : { name: unique, os: 'linux', min_disk_gb: 1, min_ram_mb: 64, visibility: 'private', provider_refs: {} },
      flavor: route.startsWith('PATCH') ? { extras: { m: 1 } } : { name: unique, vcpus: 1, ram_mb: 512, disk_gb: 1 },
      project: { instances: 10_000, vcpus: 100_000, ram_mb: 100_000_000, disk_gb: 10_000_000 },
      job: { action: 'retry', reason: 'authorization matrix' },
    };
    let id = fixtures[kind as keyof typeof fixtures] ?? '';
    if (pattern.includes(':id') && allowed && route.startsWith('DELETE')) id = await freshOps(kind as 'provider');
    const body =
      route.startsWith('GET') || route.startsWith('DELETE') || route.endsWith('/check')
        ? undefined
        : route.endsWith('/enrollments')
          ? {}
          : route.startsWith('PATCH') && kind === 'provider'
            ? { settings: { m: 1 } }
            : route.startsWith('PATCH') && kind === 'cluster'
              ? { enabled: true }
              : bodies[kind];
    // Each permitted rebuild takes another read model, so no two run at once.
    const readModels = [
      'vm-read-model',
      'job-read-model',
      'ops-catalog',
      'cluster-usage',
      'quota-read-model',
      'audit',
      'metering',
    ];
    return {
      path: pattern
        .replace(':id', id)
        .replace(':project_id', 'quota-matrix')
        .replace(':name', readModels[serial % readModels.length]),
      body,
    };
  }

  async function freshOps(kind: 'provider' | 'cluster' | 'zone' | 'image' | 'flavor'): Promise<string> {
    const name = `fresh${++serial}`;
    const bodies = {
      provider: ['/v1/ops/providers', { name, type: 'simulator' }],
      cluster: ['/v1/ops/clusters', { name, provider_id: fixtures.provider }],
      zone: ['/v1/ops/zones', { id: name, name, cluster_ids: [fixtures.cluster], policy: 'spread' }],
      image: [
        '/v1/ops/images',
        { name, os: 'linux', min_disk_gb: 1, min_ram_mb: 64, visibility: 'private', provider_refs: {} },
      ],
      flavor: ['/v1/ops/flavors', { name, vcpus: 1, ram_mb: 512, disk_gb: 1 }],
    } as const;
    const [path, body] = bodies[kind];
    const res = await opsAdmin.post(path, body);
    expect(res.status).toBe(201);
    return res.body.id;
  }
});

function describeCaller(caller: Caller): string {
  if (caller.kind === 'break-glass') return `break-glass ${caller.withReason ? 'with' : 'without'} reason`;
  return `${caller.kind} ${caller.role}`;
}
