import { randomUUID } from 'node:crypto';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { ApiClient, ApiResponse, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

type Json = Record<string, any>;

/**
 * The answers HCP really gives, held to the /openapi.json it serves: every status a call meets is
 * documented for its route, every JSON body matches the documented schema, and every error names a
 * code the document lists for that route and status. Keeps the hand-written answer schemas honest.
 */
describe('/openapi.json describes the answers HCP gives', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let tenant: ApiClient;
  let ops: ApiClient;
  let doc: Json;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const seen: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('hcp_openapi_answers');
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' } });
    tenant = new ApiClient(hcp.baseUrl, hcp.token('alice', { demo: 'admin' }));
    ops = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator', 'infra-admin', 'security-auditor']));
    const served = await tenant.as(undefined).get('/openapi.json');
    expect(served.status).toBe(200);
    doc = served.body;
  });

  beforeEach(() => {
    problems.length = 0;
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  /** Checks one answer against the document's route `METHOD template`; returns it for the test to go on. */
  function documented<T extends ApiResponse>(route: string, res: T): T {
    const [method, template] = route.split(' ') as [string, string];
    const where = `${route} ${res.status}`;
    seen.push(where);
    const response = doc.paths[template]?.[method.toLowerCase()]?.responses?.[String(res.status)];
    if (!response) {
      problems.push(`${where}: status not documented (${JSON.stringify(res.body).slice(0, 200)})`);
      return res;
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
    if (res.status === 204) return res;
    const media = response.content?.[type];
    if (!media) {
      problems.push(`${where}: ${type} not documented (${Object.keys(response.content ?? {}).join(', ')})`);
      return res;
    }
    if (type !== 'application/json') return res;
    const validate = ajv.compile({ ...media.schema, components: doc.components });
    if (!validate(res.body))
      problems.push(`${where}: body does not match its schema: ${ajv.errorsText(validate.errors)}`);
    if (res.status >= 400 && !media.examples?.[res.body?.error?.code])
      problems.push(
        `${where}: ${res.body?.error?.code} is not among the documented ${Object.keys(media.examples ?? {})}`,
      );
    return res;
  }

  /** A call made to meet one answer: it must be that one, and documented. */
  function answered<T extends ApiResponse>(route: string, status: number, res: T): T {
    if (res.status !== status) problems.push(`${route}: answered ${res.status}, the test meant to meet ${status}`);
    return documented(route, res);
  }

  it('documents the tenant answers: catalog, VM, jobs, console, quotas and their refusals', async () => {
    const { image_id, flavor_id } = await seededChoice(tenant);
    documented('GET /v1/zones', await tenant.get('/v1/zones'));
    documented('GET /v1/images', await tenant.get('/v1/images'));
    documented('GET /v1/images/{id}', await tenant.get(`/v1/images/${image_id}`));
    documented('GET /v1/flavors', await tenant.get('/v1/flavors'));
    documented('GET /v1/flavors/{id}', await tenant.get(`/v1/flavors/${flavor_id}`));

    const body = { name: 'doc-1', zone: 'local', image_id, flavor_id, tags: { env: 'dev' } };
    const key = { 'idempotency-key': `doc-${randomUUID()}` };
    const created = documented(
      'POST /v1/projects/{project_id}/vms',
      await tenant.post('/v1/projects/demo/vms', body, key),
    );
    expect(created.status).toBe(202);
    const vmId = created.body.resource_id;
    documented(
      'GET /v1/projects/{project_id}/jobs/{job_id}',
      await tenant.get(`/v1/projects/demo/jobs/${created.body.job_id}`),
    );
    await jobFinished(tenant, 'demo', created.body.job_id);
    await eventually(async () => {
      const vm = await tenant.get(`/v1/projects/demo/vms/${vmId}`);
      return vm.body.status === 'running' ? vm : undefined;
    }, 'VM running');
    documented('GET /v1/projects/{project_id}/vms/{vm_id}', await tenant.get(`/v1/projects/demo/vms/${vmId}`));
    documented('GET /v1/projects/{project_id}/vms', await tenant.get('/v1/projects/demo/vms?limit=5'));
    documented(
      'PATCH /v1/projects/{project_id}/vms/{vm_id}',
      await tenant.patch(`/v1/projects/demo/vms/${vmId}`, { tags: { env: 'prod' } }),
    );
    documented('GET /v1/projects/{project_id}/jobs', await tenant.get('/v1/projects/demo/jobs'));
    documented('GET /v1/projects/{project_id}/quotas', await tenant.get('/v1/projects/demo/quotas'));
    const console = documented(
      'POST /v1/projects/{project_id}/vms/{vm_id}/console',
      await tenant.post(`/v1/projects/demo/vms/${vmId}/console`, { type: 'vnc' }),
    );
    expect(console.status).toBe(201);
    answered(
      'POST /v1/projects/{project_id}/vms/{vm_id}/console',
      422,
      await tenant.post(`/v1/projects/demo/vms/${vmId}/console`, { type: 'rdp' }),
    );

    // Refusals: each is the envelope, under a documented status, with a code the document names there.
    answered(
      'POST /v1/projects/{project_id}/vms',
      409,
      await tenant.post('/v1/projects/demo/vms', { ...body, name: 'other' }, key),
    );
    answered(
      'GET /v1/projects/{project_id}/vms/{vm_id}',
      404,
      await tenant.get(`/v1/projects/demo/vms/${randomUUID()}`),
    );
    answered('GET /v1/projects/{project_id}/vms/{vm_id}', 400, await tenant.get('/v1/projects/demo/vms/not-a-uuid'));
    answered('GET /v1/projects/{project_id}/vms', 401, await tenant.as(undefined).get('/v1/projects/demo/vms'));
    answered('GET /v1/projects/{project_id}/vms', 404, await tenant.get('/v1/projects/elsewhere/vms'));
    answered('GET /v1/projects/{project_id}/vms', 400, await tenant.get('/v1/projects/demo/vms?limit=500'));
    answered(
      'POST /v1/projects/{project_id}/vms/{vm_id}/actions/stop',
      415,
      await tenant.raw('POST', `/v1/projects/demo/vms/${vmId}/actions/stop`, 'force', { 'content-type': 'text/plain' }),
    );
    const stopped = documented(
      'POST /v1/projects/{project_id}/vms/{vm_id}/actions/stop',
      await tenant.post(`/v1/projects/demo/vms/${vmId}/actions/stop`, { force: true }),
    );
    expect(stopped.status).toBe(202);
    await jobFinished(tenant, 'demo', stopped.body.job_id);
    answered(
      'POST /v1/projects/{project_id}/vms/{vm_id}/actions/reboot',
      409,
      await tenant.post(`/v1/projects/demo/vms/${vmId}/actions/reboot`, {}),
    );
    const deleted = documented(
      'DELETE /v1/projects/{project_id}/vms/{vm_id}',
      await tenant.delete(`/v1/projects/demo/vms/${vmId}`),
    );
    expect(deleted.status).toBe(202);
    answered(
      'POST /v1/projects/{project_id}/vms/{vm_id}/actions/start',
      409,
      await tenant.post(`/v1/projects/demo/vms/${vmId}/actions/start`, {}),
    );
    expect(problems).toEqual([]);
  });

  it('documents the ops answers and refusals', async () => {
    const providers = documented('GET /v1/ops/providers', await ops.get('/v1/ops/providers'));
    const providerId = providers.body.items[0].id;
    documented('GET /v1/ops/providers/{id}', await ops.get(`/v1/ops/providers/${providerId}`));
    documented('POST /v1/ops/providers/{id}/check', await ops.post(`/v1/ops/providers/${providerId}/check`));
    const clusters = documented('GET /v1/ops/clusters', await ops.get('/v1/ops/clusters'));
    const clusterId = clusters.body.items[0].id;
    documented('GET /v1/ops/clusters/{id}', await ops.get(`/v1/ops/clusters/${clusterId}`));
    answered(
      'POST /v1/ops/clusters/{id}/enrollments',
      422,
      await ops.post(`/v1/ops/clusters/${clusterId}/enrollments`, {}),
    );
    const zones = documented('GET /v1/ops/zones', await ops.get('/v1/ops/zones'));
    documented('GET /v1/ops/zones/{id}', await ops.get(`/v1/ops/zones/${zones.body.items[0].id}`));
    documented('GET /v1/ops/images', await ops.get('/v1/ops/images'));
    documented('GET /v1/ops/flavors', await ops.get('/v1/ops/flavors'));

    const flavor = { name: 'doc-flavor', vcpus: 1, ram_mb: 512, disk_gb: 5 };
    const created = answered('POST /v1/ops/flavors', 201, await ops.post('/v1/ops/flavors', flavor));
    // The name check reads the ops catalog table, which follows the flavor's stream a moment later.
    await eventually(async () => {
      const flavors = (await ops.get('/v1/ops/flavors')).body.items as Json[];
      return flavors.some((f) => f.id === created.body.id) ? true : undefined;
    }, 'the flavor listed');
    answered('POST /v1/ops/flavors', 409, await ops.post('/v1/ops/flavors', flavor));
    documented('PATCH /v1/ops/flavors/{id}', await ops.patch(`/v1/ops/flavors/${created.body.id}`, { vcpus: 2 }));
    answered('DELETE /v1/ops/flavors/{id}', 204, await ops.delete(`/v1/ops/flavors/${created.body.id}`));
    answered('DELETE /v1/ops/flavors/{id}', 404, await ops.delete(`/v1/ops/flavors/${created.body.id}`));

    documented(
      'PUT /v1/ops/projects/{project_id}/quotas',
      await ops.request('PUT', '/v1/ops/projects/demo/quotas', {
        instances: 10,
        vcpus: 20,
        ram_mb: 65536,
        disk_gb: 500,
      }),
    );
    const jobs = documented('GET /v1/ops/jobs', await ops.get('/v1/ops/jobs'));
    documented('GET /v1/ops/vms', await ops.get('/v1/ops/vms'));
    const job = jobs.body.items.find((j: Json) => j.status === 'succeeded');
    expect(job).toBeDefined();
    answered(
      'POST /v1/ops/jobs/{id}/recover',
      409,
      await ops.post(`/v1/ops/jobs/${job.id}/recover`, { action: 'retry', reason: 'documentation check' }),
    );
    documented('GET /v1/ops/audit', await ops.get('/v1/ops/audit?limit=20'));
    documented('GET /v1/ops/metering', await ops.get('/v1/ops/metering'));
    const day = {
      from: new Date(Date.now() - 86_400_000).toISOString(),
      to: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const usage = documented(
      'GET /v1/ops/usage',
      await ops.get(`/v1/ops/usage?from=${day.from}&to=${day.to}&detail=vm`),
    );
    expect(usage.body.vms.length).toBeGreaterThan(0);
    answered('GET /v1/ops/usage', 400, await ops.get(`/v1/ops/usage?from=${day.to}&to=${day.from}`));
    documented('GET /v1/ops/projections', await ops.get('/v1/ops/projections'));
    documented('GET /v1/ops/dead-letters', await ops.get('/v1/ops/dead-letters'));
    answered('POST /v1/ops/dead-letters/{id}/retry', 404, await ops.post(`/v1/ops/dead-letters/${randomUUID()}/retry`));
    documented('GET /v1/ops/orphans', await ops.get('/v1/ops/orphans'));
    answered('POST /v1/ops/orphans/{id}/adopt', 404, await ops.post(`/v1/ops/orphans/${randomUUID()}/adopt`));
    documented('GET /v1/ops/hosts', await ops.get('/v1/ops/hosts'));
    answered('POST /v1/ops/vms/{id}/reconcile', 404, await ops.post(`/v1/ops/vms/${randomUUID()}/reconcile`));
    answered('GET /v1/ops/vms', 403, await tenant.get('/v1/ops/vms'));
    expect(problems).toEqual([]);
  });

  it('documents health, metrics and the webconsole page', async () => {
    const anyone = tenant.as(undefined);
    documented('GET /health/live', await anyone.get('/health/live'));
    documented('GET /health/ready', await anyone.get('/health/ready'));
    documented('GET /metrics', await anyone.get('/metrics'));
    documented('GET /console/{session_id}', await anyone.get(`/console/${randomUUID()}`));
    expect(problems).toEqual([]);
    // The calls above met success and refusal answers alike.
    expect(seen.filter((s) => / [45]\d\d$/.test(s)).length).toBeGreaterThanOrEqual(10);
  });
});
