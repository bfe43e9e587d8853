import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/** Ops rebuild a read model from position zero while tenants keep reading it. */
describe('projection rebuild', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let tenant: ApiClient;
  let ops: ApiClient;

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
    tenant = new ApiClient(hcp.baseUrl, hcp.token('rita', { rb: 'admin' }));
    ops = new ApiClient(hcp.baseUrl, hcp.token('otto', {}, ['cloud-operator']));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('rebuilds the VM read model beside the live one and swaps, while reads keep answering', async () => {
    const choice = await seededChoice(tenant);
    const vms: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await tenant.post('/v1/projects/rb/vms', {
        name: `rb-${i}`,
        zone: 'local',
        ...choice,
        tags: { n: String(i) },
      });
      vms.push(res.body.resource_id);
      await jobFinished(tenant, 'rb', res.body.job_id);
    }
    const before = await eventually(async () => {
      const res = await tenant.get('/v1/projects/rb/vms?status=running&limit=200');
      return res.body.items.length === 12 ? res.body.items : undefined;
    }, 'twelve running VMs');

    let reading = true;
    const answers: number[] = [];
    const reader = (async () => {
      while (reading) {
        const [list, one] = await Promise.all([
          tenant.get('/v1/projects/rb/vms?limit=200'),
          tenant.get(`/v1/projects/rb/vms/${vms[3]}`),
        ]);
        answers.push(list.status, one.status);
        if (list.status === 200 && list.body.items.length !== 12) answers.push(-list.body.items.length);
      }
    })();

    const started = await ops.post('/v1/ops/projections/vm-read-model/rebuild');
    expect(started.status).toBe(202);
    const done = await eventually(
      async () => {
        const res = await ops.get('/v1/ops/projections');
        const vm = res.body.items.find((p: { name: string }) => p.name === 'vm-read-model');
        return vm.last_rebuild && !vm.rebuilding ? vm : undefined;
      },
      'the rebuild to finish',
      60_000,
    );
    reading = false;
    await reader;

    expect(done.last_rebuild.events).toBeGreaterThanOrEqual(12 * 2);
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((a) => a !== 200)).toEqual([]);
    const after = (await tenant.get('/v1/projects/rb/vms?status=running&limit=200')).body.items;
    expect(after).toEqual(before);

    // The live projection goes on from the swapped-in checkpoint: a new VM still appears.
    const late = await tenant.post('/v1/projects/rb/vms', { name: 'rb-late', zone: 'local', ...choice });
    await jobFinished(tenant, 'rb', late.body.job_id);
    await eventually(
      async () =>
        (await tenant.get(`/v1/projects/rb/vms/${late.body.resource_id}`)).body.status === 'running' ? true : undefined,
      'the late VM',
    );
  });

  it('shows each projection with position and lag, and refuses to rebuild a process manager or an unknown name', async () => {
    const list = (await ops.get('/v1/ops/projections')).body.items;
    expect(list.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['vm-read-model', 'job-read-model', 'audit', 'metering', 'job-dispatcher']),
    );
    const read = ['vm-read-model', 'job-read-model', 'audit', 'metering', 'job-dispatcher'];
    for (const p of list)
      expect(p).toMatchObject(
        // A projection that has read nothing yet (the orphan read model where no orphan was ever found:
        // it reads only orphan streams) has no checkpoint, hence no position nor lag to show.
        p.position === null && !read.includes(p.name)
          ? { name: p.name, position: null, head: expect.any(String), lag: null }
          : { name: p.name, position: expect.any(String), head: expect.any(String), lag: expect.any(String) },
      );
    const manager = await ops.post('/v1/ops/projections/job-dispatcher/rebuild');
    expect([manager.status, manager.body.error.code]).toEqual([409, 'CONFLICT']);
    expect((await ops.post('/v1/ops/projections/no-such-thing/rebuild')).status).toBe(404);
  });
});
