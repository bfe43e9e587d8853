import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/** Provider failures: retried with backoff up to the attempt limit, then the job fails with the taxonomy. */
describe('job failures', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0.02',
        HCP_SIMULATOR_FAULTS: 'reboot=fail:PROVIDER_UNAVAILABLE,stop=timeout',
        HCP_JOB_MAX_ATTEMPTS: '3',
        HCP_JOB_RETRY_BACKOFF_MS: '50',
        HCP_JOB_ATTEMPT_TIMEOUT_MS: '1000',
      },
    });
    api = new ApiClient(hcp.baseUrl, hcp.token('alice', { f: 'admin' }));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  async function runningVm(name: string): Promise<string> {
    const res = await api.post('/v1/projects/f/vms', { name, zone: 'local', ...(await seededChoice(api)) });
    expect((await jobFinished(api, 'f', res.body.job_id)).status).toBe('succeeded');
    return res.body.resource_id;
  }

  it('retries a failing reboot up to the limit, then fails the job and leaves the VM running', async () => {
    const vmId = await runningVm('flaky-1');
    const res = await api.post(`/v1/projects/f/vms/${vmId}/actions/reboot`, {});
    const job = await jobFinished(api, 'f', res.body.job_id);
    expect(job).toMatchObject({
      status: 'failed',
      attempts: 3,
      error: { code: 'PROVIDER_UNAVAILABLE', retryable: true },
    });
    expect(typeof job.error.message).toBe('string');
    const vm = await eventually(async () => {
      const v = (await api.get(`/v1/projects/f/vms/${vmId}`)).body;
      return v.last_job_id === res.body.job_id && v.status === 'running' ? v : undefined;
    }, 'VM back to running');
    expect(vm.status).toBe('running');
    const history = await queryDatabase<{ type: string }>(
      db.url,
      'SELECT type FROM hcp_events WHERE stream_id = $1 ORDER BY revision',
      [`job-${res.body.job_id}`],
    );
    expect(history.map((e) => e.type)).toEqual([
      'JobQueued',
      'JobStarted',
      'JobAttemptFailed',
      'JobStarted',
      'JobAttemptFailed',
      'JobStarted',
      'JobFailed',
    ]);
  });

  it('fails a stop that never finishes with PROVIDER_TIMEOUT after its attempts', async () => {
    const vmId = await runningVm('stuck-1');
    const res = await api.post(`/v1/projects/f/vms/${vmId}/actions/stop`, { force: false });
    const job = await jobFinished(api, 'f', res.body.job_id, 60_000);
    expect(job).toMatchObject({ status: 'failed', attempts: 3, error: { code: 'PROVIDER_TIMEOUT' } });
    // A later action is accepted again: the VM settled instead of staying "stopping" forever.
    const again = await eventually(async () => {
      const r = await api.post(`/v1/projects/f/vms/${vmId}/actions/stop`, { force: true });
      return r.status === 202 ? r : undefined;
    }, 'VM accepting a new stop');
    expect(again.status).toBe(202);
  });
});
