import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';

/**
 * The zero-configuration default: no DATABASE_URL, HCP runs its own PostgreSQL in its data folder. A VM
 * created before a restart (graceful or a kill) is still there after it, with its job.
 */
describe('embedded default', () => {
  const started: HcpProcess[] = [];

  afterAll(async () => {
    for (const hcp of started) await hcp.stop();
    started[0]?.removeDataDir();
  });

  it('serves the API on its own PostgreSQL and keeps VMs and jobs across restarts', async () => {
    const first = await HcpProcess.start({ env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' } });
    started.push(first);
    const api = new ApiClient(first.baseUrl, first.token('alice', { demo: 'admin' }));
    const zones = await api.get('/v1/zones');
    expect(zones.body.items.map((z: { id: string }) => z.id)).toEqual(['local']);
    const created = await api.post('/v1/projects/demo/vms', {
      name: 'keeper',
      zone: 'local',
      ...(await seededChoice(api)),
    });
    expect(created.status).toBe(202);
    expect((await jobFinished(api, 'demo', created.body.job_id)).status).toBe('succeeded');
    await first.stop();

    const second = await HcpProcess.start({ dataDir: first.dataDir });
    started.push(second);
    const api2 = api.asBase(second.baseUrl);
    const vm = await api2.get(`/v1/projects/demo/vms/${created.body.resource_id}`);
    expect(vm.body).toMatchObject({ name: 'keeper', status: 'running' });
    expect((await api2.get(`/v1/projects/demo/jobs/${created.body.job_id}`)).body.status).toBe('succeeded');

    // Killed hard, its PostgreSQL is left running; the next start must cope with it.
    await second.kill();
    const third = await HcpProcess.start({ dataDir: first.dataDir });
    started.push(third);
    const api3 = api.asBase(third.baseUrl);
    const stop = await api3.post(`/v1/projects/demo/vms/${created.body.resource_id}/actions/stop`, {});
    expect(stop.status).toBe(202);
    expect((await jobFinished(api3, 'demo', stop.body.job_id)).status).toBe('succeeded');
    await eventually(
      async () =>
        (await api3.get(`/v1/projects/demo/vms/${created.body.resource_id}`)).body.status === 'stopped'
          ? true
          : undefined,
      'VM stopped',
    );
  });
});
