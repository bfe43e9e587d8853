import { randomUUID } from 'node:crypto';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/**
 * Ops act on a stuck or failed job: POST /v1/ops/jobs/{id}/recover with retry or mark-failed. Reboots
 * always fail here and a failed attempt waits ten minutes for its retry, so a reboot job is stuck
 * waiting until ops act.
 */
describe('job recovery by ops', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let tenant: ApiClient;
  let ops: ApiClient;
  let auditor: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0.02',
        HCP_SIMULATOR_FAULTS: 'reboot=fail:PROVIDER_UNAVAILABLE',
        HCP_JOB_MAX_ATTEMPTS: '3',
        HCP_JOB_RETRY_BACKOFF_MS: '600000',
      },
    });
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { rec: 'admin' }));
    ops = new ApiClient(hcp.baseUrl, hcp.token('otto', {}, ['cloud-operator']));
    auditor = new ApiClient(hcp.baseUrl, hcp.token('audrey', {}, ['security-auditor']));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  async function runningVm(name: string): Promise<{ vmId: string; createJob: string }> {
    const res = await tenant.post('/v1/projects/rec/vms', { name, zone: 'local', ...(await seededChoice(tenant)) });
    expect((await jobFinished(tenant, 'rec', res.body.job_id)).status).toBe('succeeded');
    return { vmId: res.body.resource_id, createJob: res.body.job_id };
  }

  /** A reboot whose first attempt failed: it waits ten minutes for the next one. */
  async function stuckReboot(vmId: string): Promise<string> {
    const res = await tenant.post(`/v1/projects/rec/vms/${vmId}/actions/reboot`, {});
    expect(res.status).toBe(202);
    await eventually(async () => {
      const job = (await tenant.get(`/v1/projects/rec/jobs/${res.body.job_id}`)).body;
      return job.status === 'queued' && job.error?.code === 'PROVIDER_UNAVAILABLE' ? job : undefined;
    }, 'reboot waiting for its retry');
    return res.body.job_id;
  }

  const history = async (jobId: string) =>
    (
      await queryDatabase<{ type: string; data: Record<string, unknown> }>(
        db.url,
        'SELECT type, data FROM hcp_events WHERE stream_id = $1 ORDER BY revision',
        [`job-${jobId}`],
      )
    ).map((e) => ({ ...e.data, type: e.type }));

  it('shows the deadline of a job', async () => {
    const { createJob } = await runningVm('deadline-1');
    const job = (await tenant.get(`/v1/projects/rec/jobs/${createJob}`)).body;
    expect(Date.parse(job.deadline) - Date.parse(job.created_at)).toBeGreaterThan(29 * 60_000);
  });

  it('is refused to tenants and to ops roles other than cloud-operator, and answers 404 for an unknown job', async () => {
    const { createJob } = await runningVm('authz-1');
    const body = { action: 'retry', reason: 'try' };
    expect((await tenant.post(`/v1/ops/jobs/${createJob}/recover`, body)).status).toBe(403);
    expect((await auditor.post(`/v1/ops/jobs/${createJob}/recover`, body)).status).toBe(403);
    const unknown = await ops.post(`/v1/ops/jobs/${randomUUID()}/recover`, body);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
  });

  it('refuses a missing or blank reason and an unknown action with 400', async () => {
    const { createJob } = await runningVm('invalid-1');
    for (const body of [{ action: 'retry' }, { action: 'retry', reason: '   ' }, { action: 'redo', reason: 'x' }]) {
      const res = await ops.post(`/v1/ops/jobs/${createJob}/recover`, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
    expect(
      (await ops.post(`/v1/ops/jobs/${createJob}/recover`, { action: 'retry', reason: 'x'.repeat(501) })).status,
    ).toBe(400);
  });

  it('answers 409 for a succeeded job, whatever the action', async () => {
    const { createJob } = await runningVm('done-1');
    for (const action of ['retry', 'mark-failed']) {
      const res = await ops.post(`/v1/ops/jobs/${createJob}/recover`, { action, reason: 'why not' });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    }
  });

  it('retries a waiting job at once with a fresh attempt budget, then marks it failed and settles the VM', async () => {
    const { vmId } = await runningVm('stuck-1');
    const jobId = await stuckReboot(vmId);

    const retried = await ops.post(`/v1/ops/jobs/${jobId}/recover`, { action: 'retry', reason: 'provider fixed' });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: jobId, status: 'queued', attempts: 0 });
    // Due now, not in ten minutes: the next attempt runs (and fails again on this provider) at once.
    await eventually(async () => {
      const types = (await history(jobId)).map((e) => e.type);
      return types.lastIndexOf('JobAttemptFailed') > types.indexOf('JobRecovered') ? types : undefined;
    }, 'the retried attempt');
    const afterRetry = await history(jobId);
    expect(afterRetry.map((e) => e.type)).toEqual([
      'JobQueued',
      'JobStarted',
      'JobAttemptFailed',
      'JobRecovered',
      'JobStarted',
      'JobAttemptFailed',
    ]);
    expect(afterRetry[3]).toMatchObject({ action: 'retry', reason: 'provider fixed', previous_status: 'queued' });
    expect(afterRetry[4]).toMatchObject({ attempt: 1 });

    const failed = await ops.post(`/v1/ops/jobs/${jobId}/recover`, {
      action: 'mark-failed',
      reason: 'rebooted by hand',
    });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({
      id: jobId,
      status: 'failed',
      error: { code: 'INTERNAL_ERROR', message: 'marked failed by ops: rebooted by hand' },
    });
    const vm = await eventually(async () => {
      const v = (await tenant.get(`/v1/projects/rec/vms/${vmId}`)).body;
      return v.status === 'running' && v.last_job_id === jobId ? v : undefined;
    }, 'VM settled as after a failed reboot');
    expect(vm.status).toBe('running');
    expect((await jobFinished(tenant, 'rec', jobId)).status).toBe('failed');

    const again = await ops.post(`/v1/ops/jobs/${jobId}/recover`, { action: 'mark-failed', reason: 'twice' });
    expect(again.status).toBe(409);
  });

  it('retries a failed job its VM can take again, under the same job id', async () => {
    const { vmId } = await runningVm('failed-1');
    const jobId = await stuckReboot(vmId);
    await ops.post(`/v1/ops/jobs/${jobId}/recover`, { action: 'mark-failed', reason: 'give up' });
    await jobFinished(tenant, 'rec', jobId);
    await eventually(async () => {
      const v = (await tenant.get(`/v1/projects/rec/vms/${vmId}`)).body;
      return v.status === 'running' ? v : undefined;
    }, 'VM running again');

    const retried = await ops.post(`/v1/ops/jobs/${jobId}/recover`, { action: 'retry', reason: 'one more try' });

    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: jobId, status: 'queued', attempts: 0, finished_at: null });
    await eventually(async () => {
      const types = (await history(jobId)).map((e) => e.type);
      return types.at(-1) === 'JobAttemptFailed' && types.includes('JobFailed') ? types : undefined;
    }, 'the retried failed job running again');
    const vm = (await tenant.get(`/v1/projects/rec/vms/${vmId}`)).body;
    expect(vm).toMatchObject({ status: 'rebooting', last_job_id: jobId });
  });

  it('audits every recovery as job.recover by the ops actor, with the action and the reason', async () => {
    const { vmId } = await runningVm('audit-1');
    const jobId = await stuckReboot(vmId);
    await ops.post(`/v1/ops/jobs/${jobId}/recover`, { action: 'mark-failed', reason: 'ticket OPS-42' });

    const record = await eventually(async () => {
      const items = (await auditor.get(`/v1/ops/audit?target=${jobId}&limit=200`)).body.items as any[];
      return items.find((r) => r.action === 'job.recover');
    }, 'the audit record of the recovery');
    expect(record).toMatchObject({
      actor: 'otto',
      action: 'job.recover',
      result: 'succeeded',
      project_id: 'rec',
      target: { job_id: jobId, vm_id: vmId },
      details: { action: 'mark-failed', reason: 'ticket OPS-42', previous_status: 'queued' },
    });
  });
});

/**
 * SIGTERM with a job in flight: the worker gives it back (JobAttemptReleased, the attempt not counted)
 * and another process takes it at once instead of waiting out the lease.
 */
describe('a worker stopped by SIGTERM with a job in flight', () => {
  let db: TestDatabase;
  const processes: HcpProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    for (const hcp of processes) {
      await hcp.stop();
      hcp.removeDataDir();
    }
    await db?.drop();
  });

  async function started(env: Record<string, string>): Promise<HcpProcess> {
    const hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: { HCP_SIMULATOR_LATENCY_SCALE: '0.02', HCP_SHUTDOWN_GRACE_MS: '6000', ...env },
    });
    processes.push(hcp);
    return hcp;
  }

  it('gives the job back on stop, and the next process finishes it with the same attempt', async () => {
    // Stops hang at this provider until their call is aborted.
    const first = await started({ HCP_SIMULATOR_FAULTS: 'stop=timeout', HCP_JOB_ATTEMPT_TIMEOUT_MS: '600000' });
    const tenant = new ApiClient(first.baseUrl, first.token('tina', { term: 'admin' }));
    const created = await tenant.post('/v1/projects/term/vms', {
      name: 'term-1',
      zone: 'local',
      ...(await seededChoice(tenant)),
    });
    expect((await jobFinished(tenant, 'term', created.body.job_id)).status).toBe('succeeded');
    const stop = await tenant.post(`/v1/projects/term/vms/${created.body.resource_id}/actions/stop`, { force: false });
    const jobId: string = stop.body.job_id;
    await eventually(async () => {
      const job = (await tenant.get(`/v1/projects/term/jobs/${jobId}`)).body;
      return job.status === 'running' ? job : undefined;
    }, 'the stop running');

    await first.stop();

    const types = async () =>
      (
        await queryDatabase<{ type: string }>(
          db.url,
          'SELECT type FROM hcp_events WHERE stream_id = $1 ORDER BY revision',
          [`job-${jobId}`],
        )
      ).map((e) => e.type);
    expect(await types()).toEqual(['JobQueued', 'JobStarted', 'JobAttemptReleased']);
    const [row] = await queryDatabase<{ status: string; lease_owner: string | null; due: boolean }>(
      db.url,
      'SELECT status, lease_owner, available_at <= now() AS due FROM job_queue WHERE job_id = $1',
      [jobId],
    );
    expect(row).toEqual({ status: 'queued', lease_owner: null, due: true });

    const second = await started({});
    const job = await jobFinished(
      new ApiClient(second.baseUrl, second.token('tina', { term: 'admin' })),
      'term',
      jobId,
    );
    expect(job).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(await types()).toEqual(['JobQueued', 'JobStarted', 'JobAttemptReleased', 'JobStarted', 'JobSucceeded']);
  });
});
