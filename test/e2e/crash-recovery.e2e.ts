import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/**
 * Kill HCP (SIGKILL: no shutdown hook runs) while a job is inside its driver call, start it again on
 * the same database, and the job still finishes, with exactly one VM on the provider.
 */
describe('crash recovery', () => {
  let db: TestDatabase;
  const started: HcpProcess[] = [];
  // Slow enough that the kill lands inside the create (clone ~1.5 s at scale 1), short leases so the
  // restarted worker reclaims the job within seconds.
  const env = { HCP_SIMULATOR_LATENCY_SCALE: '2', HCP_JOB_LEASE_MS: '1500', HCP_JOB_RETRY_BACKOFF_MS: '100' };

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    for (const hcp of started) await hcp.stop();
    started[0]?.removeDataDir();
    await db?.drop();
  });

  async function start(dataDir?: string): Promise<HcpProcess> {
    const hcp = await HcpProcess.start({ databaseUrl: db.url, dataDir, env });
    started.push(hcp);
    return hcp;
  }

  it('finishes a create job after the worker is killed mid-call, with exactly one VM in the simulator', async () => {
    const first = await start();
    const api = new ApiClient(first.baseUrl, first.token('alice', { crash: 'admin' }));
    const res = await api.post('/v1/projects/crash/vms', {
      name: 'survivor',
      zone: 'local',
      ...(await seededChoice(api)),
    });
    expect(res.status).toBe(202);
    const { resource_id: vmId, job_id: jobId } = res.body;

    // Wait until the simulator is mid-clone: the provider-side VM exists but is not finished.
    await eventually(
      async () => {
        const rows = await queryDatabase<{ phase: string }>(
          db.url,
          'SELECT phase FROM simulator.vms WHERE hcp_id = $1',
          [vmId],
        );
        return rows[0] && rows[0].phase !== 'ready' ? rows[0].phase : undefined;
      },
      'the simulator to start cloning',
      20_000,
    );
    await first.kill();

    const second = await start(first.dataDir);
    const job = await jobFinished(api.asBase(second.baseUrl), 'crash', jobId, 60_000);
    expect(job.status).toBe('succeeded');
    expect(job.attempts).toBe(2);

    const vms = await queryDatabase<{ phase: string; power_state: string }>(
      db.url,
      'SELECT phase, power_state FROM simulator.vms WHERE hcp_id = $1',
      [vmId],
    );
    expect(vms).toEqual([{ phase: 'ready', power_state: 'running' }]);
    const vm = await eventually(async () => {
      const v = (await api.asBase(second.baseUrl).get(`/v1/projects/crash/vms/${vmId}`)).body;
      return v.status === 'running' ? v : undefined;
    }, 'VM running');
    expect(vm.last_job_id).toBe(jobId);

    // The job's own history tells what happened: the killed attempt was written off, then retried.
    const history = await queryDatabase<{ type: string }>(
      db.url,
      'SELECT type FROM hcp_events WHERE stream_id = $1 ORDER BY revision',
      [`job-${jobId}`],
    );
    expect(history.map((e) => e.type)).toEqual([
      'JobQueued',
      'JobStarted',
      'JobAttemptFailed',
      'JobStarted',
      'JobSucceeded',
    ]);
  });

  it('turns a request accepted just before a kill into a job that finishes', async () => {
    const hcp = started[started.length - 1];
    const api = new ApiClient(hcp.baseUrl, hcp.token('alice', { crash: 'admin' }));
    const choice = await seededChoice(api);
    const accepted: Array<{ resource_id: string; job_id: string }> = [];
    for (let i = 0; i < 5; i++) {
      const res = await api.post('/v1/projects/crash/vms', { name: `burst-${i}`, zone: 'local', ...choice });
      expect(res.status).toBe(202);
      accepted.push(res.body);
    }
    await hcp.kill();
    const again = await start(hcp.dataDir);
    const apiAgain = api.asBase(again.baseUrl);
    for (const { job_id, resource_id } of accepted) {
      expect((await jobFinished(apiAgain, 'crash', job_id, 60_000)).status).toBe('succeeded');
      const rows = await queryDatabase(db.url, 'SELECT 1 FROM simulator.vms WHERE hcp_id = $1', [resource_id]);
      expect(rows).toHaveLength(1);
    }
  });
});
