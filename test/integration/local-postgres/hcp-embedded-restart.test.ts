import { ApiClient, eventually, jobFinished } from '../../support/api-client';
import { seededChoice } from '../../support/catalog';
import { HcpProcess } from '../../support/hcp-process';
import { postmasterPid, serverProcesses } from './local-postgres.fixtures';

// HCP as `npm start` runs it: no DATABASE_URL, its own PostgreSQL in its data folder.
jest.setTimeout(300_000);

describe('HCP on its embedded PostgreSQL', () => {
  let hcp: HcpProcess | undefined;

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
  });

  it('brings its PostgreSQL back after the postmaster is killed and serves again, without restarting itself', async () => {
    hcp = await HcpProcess.start({ env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' } });
    const api = new ApiClient(hcp.baseUrl, hcp.token('alice', { demo: 'admin' }));
    const created = await api.post('/v1/projects/demo/vms', {
      name: 'survivor',
      zone: 'local',
      ...(await seededChoice(api)),
    });
    expect(created.status).toBe(202);
    expect((await jobFinished(api, 'demo', created.body.job_id)).status).toBe('succeeded');

    const killed = (await postmasterPid(hcp.dataDir))!;
    process.kill(killed, 'SIGKILL');
    await eventually(
      async () => ((await serverProcesses(hcp!.dataDir)).includes(killed) ? undefined : true),
      'the killed postmaster gone',
    );
    const vm = await eventually(
      async () => {
        const res = await api.get(`/v1/projects/demo/vms/${created.body.resource_id}`);
        return res.status === 200 ? res.body : undefined;
      },
      'the VM served again',
      120_000,
    );
    expect(vm).toMatchObject({ name: 'survivor', status: 'running' });
    expect(hcp.running).toBe(true);
    expect(await postmasterPid(hcp.dataDir)).not.toBe(killed);
    expect(hcp.logs).toContain(`embedded PostgreSQL (pid ${killed}) died; restarting it`);

    const stop = await api.post(`/v1/projects/demo/vms/${created.body.resource_id}/actions/stop`, {});
    expect(stop.status).toBe(202);
    expect((await jobFinished(api, 'demo', stop.body.job_id)).status).toBe('succeeded');

    // An orderly stop of HCP stops its PostgreSQL for good: supervision ends first.
    await hcp.stop();
    expect(await serverProcesses(hcp.dataDir)).toEqual([]);
  });
});
