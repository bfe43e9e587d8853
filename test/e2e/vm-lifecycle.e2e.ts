import { type components, type HcpClient, listAll, paginate, type operations, unwrap, type Vm } from '@hcp/client';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

type CreateVm = components['schemas']['CreateVmDto'];
type ListVmsQuery = NonNullable<operations['VmsController_list']['parameters']['query']>;

const PROVIDER_WORDS = /simulator|cluster|placement|image_ref|provider|vmid|node|sim_id|template\//i;

describe('VM lifecycle over HTTP', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;
  let client: HcpClient;
  let choice: { image_id: string; flavor_id: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' } });
    api = new ApiClient(hcp.baseUrl, hcp.token('alice', { demo: 'admin' }));
    client = api.typed();
    choice = await seededChoice(api);
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  async function create(name: string, extra: Partial<CreateVm> = {}, as: HcpClient = client, project = 'demo') {
    const res = await as.POST('/v1/projects/{project_id}/vms', {
      params: { path: { project_id: project } },
      body: { name, zone: 'local', ...choice, ...extra },
    });
    expect(res.response.status).toBe(202);
    return { body: unwrap(res), headers: res.response.headers };
  }

  const getVm = async (vmId: string, as: HcpClient = client, project = 'demo'): Promise<Vm> =>
    unwrap(
      await as.GET('/v1/projects/{project_id}/vms/{vm_id}', { params: { path: { project_id: project, vm_id: vmId } } }),
    );

  it('creates a VM and drives it through stop, start, reboot and delete, each as a tracked job', async () => {
    const created = await create('web-1', {
      tags: { env: 'dev' },
      ssh_keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZYbNl7rMudkQn9R5hKhsnpmWCKkTr8PiDVkvtdFVY alice@laptop'],
    });
    expect(created.body).toEqual({ resource_id: expect.any(String), job_id: expect.any(String) });
    expect(created.headers.get('location')).toBe(`/v1/projects/demo/jobs/${created.body.job_id}`);
    const vmId = created.body.resource_id;

    const createJob = await jobFinished(client, 'demo', created.body.job_id);
    expect(createJob).toMatchObject({
      type: 'vm.create',
      status: 'succeeded',
      resource_id: vmId,
      attempts: 1,
      error: null,
    });
    expect(createJob.trace_id).toBe(created.headers.get('x-request-id'));
    expect(Date.parse(createJob.finished_at)).toBeGreaterThanOrEqual(Date.parse(createJob.started_at));

    const running = await eventually(async () => {
      const vm = await getVm(vmId);
      return vm.status === 'running' ? vm : undefined;
    }, 'VM running');
    expect(running).toMatchObject({
      name: 'web-1',
      zone: 'local',
      desired_state: 'running',
      tags: { env: 'dev' },
      last_job_id: created.body.job_id,
    });
    expect(running.addresses).toEqual([{ type: 'ipv4', address: expect.stringMatching(/^10\./), nic: 'net0' }]);

    for (const [action, body, expected] of [
      ['stop', { force: false }, 'stopped'],
      ['start', {}, 'running'],
      ['reboot', { force: true }, 'running'],
    ] as const) {
      const res = await client.POST(`/v1/projects/{project_id}/vms/{vm_id}/actions/${action}`, {
        params: { path: { project_id: 'demo', vm_id: vmId } },
        body,
      });
      expect(res.response.status).toBe(202);
      const accepted = unwrap(res);
      expect(accepted.resource_id).toBe(vmId);
      const job = await jobFinished(client, 'demo', accepted.job_id);
      expect(job).toMatchObject({ type: `vm.${action}`, status: 'succeeded' });
      const vm = await eventually(async () => {
        const v = await getVm(vmId);
        return v.last_job_id === accepted.job_id && v.status === expected ? v : undefined;
      }, `VM ${expected} after ${action}`);
      expect(vm.addresses.length).toBe(expected === 'stopped' ? 0 : 1);
    }

    const deleted = await client.DELETE('/v1/projects/{project_id}/vms/{vm_id}', {
      params: { path: { project_id: 'demo', vm_id: vmId } },
    });
    expect(deleted.response.status).toBe(202);
    expect(await jobFinished(client, 'demo', unwrap(deleted).job_id)).toMatchObject({
      type: 'vm.delete',
      status: 'succeeded',
    });
    await eventually(async () => ((await getVm(vmId)).status === 'deleted' ? true : undefined), 'VM deleted');

    // The simulator (the "hypervisor") no longer has it, and it is gone from the default list.
    expect(await queryDatabase(db.url, 'SELECT 1 FROM simulator.vms WHERE hcp_id = $1', [vmId])).toHaveLength(0);
    const list = unwrap(
      await client.GET('/v1/projects/{project_id}/vms', {
        params: { path: { project_id: 'demo' }, query: { name: 'web-1' } },
      }),
    );
    expect(list.items).toHaveLength(0);
    const jobs = unwrap(
      await client.GET('/v1/projects/{project_id}/jobs', {
        params: { path: { project_id: 'demo' }, query: { resource_id: vmId } },
      }),
    );
    expect(jobs.items.map((j) => j.type)).toEqual(['vm.delete', 'vm.reboot', 'vm.start', 'vm.stop', 'vm.create']);
  });

  it('creates a VM powered off when power_on is false', async () => {
    const created = await create('cold-1', { power_on: false });
    await jobFinished(client, 'demo', created.body.job_id);
    const vm = await eventually(async () => {
      const v = await getVm(created.body.resource_id);
      return v.status === 'stopped' ? v : undefined;
    }, 'VM stopped');
    expect(vm.desired_state).toBe('stopped');
    expect(vm.addresses).toEqual([]);
  });

  it('patches tags and metadata and answers the VM', async () => {
    const created = await create('patch-1', { tags: { a: '1' } });
    const res = await client.PATCH('/v1/projects/{project_id}/vms/{vm_id}', {
      params: { path: { project_id: 'demo', vm_id: created.body.resource_id } },
      body: { metadata: { owner: 'team-x' } },
    });
    expect(res.response.status).toBe(200);
    expect(unwrap(res)).toMatchObject({
      id: created.body.resource_id,
      tags: { a: '1' },
      metadata: { owner: 'team-x' },
    });
    await eventually(async () => {
      const vm = await getVm(created.body.resource_id);
      return vm.metadata.owner === 'team-x' ? vm : undefined;
    }, 'metadata in the read model');
  });

  it('lists with filters and pages with an opaque cursor', async () => {
    const bob = api.as(hcp.token('bob', { lister: 'admin' })).typed();
    for (let i = 0; i < 5; i++) await create(`node-${i}`, { tags: { tier: i % 2 ? 'odd' : 'even' } }, bob, 'lister');
    const vms = (query: ListVmsQuery = {}) =>
      bob.GET('/v1/projects/{project_id}/vms', { params: { path: { project_id: 'lister' }, query } }).then(unwrap);
    const all = await eventually(async () => {
      const page = await vms({ limit: 200 });
      return page.items.length === 5 ? page.items : undefined;
    }, 'five VMs listed');
    expect(all.map((v) => v.name)).toEqual(['node-4', 'node-3', 'node-2', 'node-1', 'node-0']);

    const pageSizes: number[] = [];
    const seen: string[] = [];
    const pages = paginate(async (cursor) => {
      const page = await vms({ limit: 2, ...(cursor ? { cursor } : {}) });
      pageSizes.push(page.items.length);
      return page;
    });
    for await (const vm of pages) seen.push(vm.name);
    expect(seen).toEqual(['node-4', 'node-3', 'node-2', 'node-1', 'node-0']);
    expect(pageSizes).toEqual([2, 2, 1]);
    const walked: string[] = [];
    for await (const vm of listAll(bob, '/v1/projects/{project_id}/vms', {
      path: { project_id: 'lister' },
      query: { limit: 2 },
    }))
      walked.push(vm.name);
    expect(walked).toEqual(seen);

    const odd = await vms({ tag: ['tier:odd'] });
    expect(odd.items.map((v) => v.name).sort()).toEqual(['node-1', 'node-3']);
    expect((await vms({ name: 'node-2', zone: 'local' })).items).toHaveLength(1);
    expect((await vms({ zone: 'elsewhere' })).items).toHaveLength(0);
    await eventually(
      async () => ((await vms({ status: 'running' })).items.length === 5 ? true : undefined),
      'all five running',
    );
  });

  it('never shows a provider detail to tenants', async () => {
    const created = await create('secret-1');
    await jobFinished(client, 'demo', created.body.job_id);
    const demo = { project_id: 'demo' };
    const bodies = [
      await client.GET('/v1/projects/{project_id}/vms/{vm_id}', {
        params: { path: { ...demo, vm_id: created.body.resource_id } },
      }),
      await client.GET('/v1/projects/{project_id}/vms', { params: { path: demo } }),
      await client.GET('/v1/projects/{project_id}/jobs/{job_id}', {
        params: { path: { ...demo, job_id: created.body.job_id } },
      }),
      await client.GET('/v1/zones'),
      await client.GET('/v1/images'),
      await client.GET('/v1/flavors'),
    ].map((r) => JSON.stringify(unwrap<unknown>(r)));
    for (const body of bodies) {
      const withoutCapabilities = body.replace(/"capabilities":\{[^}]*\}/g, '');
      expect(withoutCapabilities).not.toMatch(PROVIDER_WORDS);
    }
  });

  it('publishes the API as OpenAPI 3 without a token', async () => {
    const res = await api.as(undefined).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/projects/{project_id}/vms',
        '/v1/projects/{project_id}/vms/{vm_id}/actions/stop',
        '/v1/projects/{project_id}/jobs/{job_id}',
      ]),
    );
    // Bodies are described by the same rules the validation enforces, and every reference resolves.
    const create = res.body.components.schemas.CreateVmDto;
    expect(create.required).toEqual(expect.arrayContaining(['name', 'zone', 'image_id', 'flavor_id']));
    expect(create.properties.image_id).toMatchObject({ type: 'string', format: 'uuid' });
    const refs = [...JSON.stringify(res.body).matchAll(/"#\/components\/schemas\/([A-Za-z0-9_]+)"/g)].map((m) => m[1]);
    expect(refs.filter((name) => !res.body.components.schemas[name])).toEqual([]);
  });

  it('is not ready while the schema is not the one this release expects', async () => {
    expect((await api.get('/health/ready')).status).toBe(200);
    await queryDatabase(
      db.url,
      `INSERT INTO schema_migrations (timestamp, name) VALUES (9999999999999, 'FromTheFuture9999999999999')`,
    );
    try {
      const res = await api.get('/health/ready');
      expect(res.status).toBe(503);
      expect(res.body.checks.schema).toEqual({
        status: 'failing',
        reason: 'unknown_migrations: FromTheFuture9999999999999',
      });
      expect(res.body.checks.database).toEqual({ status: 'ok' });
      expect(JSON.stringify(res.body)).not.toContain(db.url);
      expect((await api.get('/health/live')).status).toBe(200);
    } finally {
      await queryDatabase(db.url, `DELETE FROM schema_migrations WHERE name = 'FromTheFuture9999999999999'`);
    }
    expect((await api.get('/health/ready')).status).toBe(200);
  });

  it('exposes Prometheus metrics that move as requests and jobs run', async () => {
    const scrape = async () => (await fetch(`${hcp.baseUrl}/metrics`)).text();
    const count = (text: string, pattern: RegExp) => Number(text.match(pattern)?.[1] ?? 0);
    const jobsBefore = count(
      await scrape(),
      /hcp_jobs_finished_total\{type="vm.create",provider="simulator",outcome="succeeded"\} (\d+)/,
    );
    const created = await create('metered-1');
    await jobFinished(client, 'demo', created.body.job_id);
    const text = await scrape();
    expect(text).toMatch(
      /hcp_http_request_duration_seconds_count\{method="POST",route="\/v1\/projects\/:project_id\/vms",status="202"\} \d+/,
    );
    expect(
      count(text, /hcp_jobs_finished_total\{type="vm.create",provider="simulator",outcome="succeeded"\} (\d+)/),
    ).toBe(jobsBefore + 1);
    expect(text).toMatch(
      /hcp_provider_call_duration_seconds_count\{provider="simulator",operation="create",outcome="ok"\} \d+/,
    );
    expect(text).toMatch(/process_resident_memory_bytes \d+/);
    expect(text.split('\n').filter((l) => /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}/.test(l))).toEqual([]);
  });
});
