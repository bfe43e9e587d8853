import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

const run = promisify(execFile);

/** The audit trail is derived from the event stream: queryable by auditors and replayable from the log. */
describe('audit trail', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let auditor: ApiClient;
  let tenant: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0' } });
    auditor = new ApiClient(hcp.baseUrl, hcp.token('audrey', {}, ['security-auditor']));
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tom', { aud: 'admin' }));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('records the request, the job steps and refusals, with actor, action, target, result and trace id', async () => {
    const created = await tenant.post(
      '/v1/projects/aud/vms',
      { name: 'audited', zone: 'local', ...(await seededChoice(tenant)) },
      { 'x-request-id': 'trace-audit-1' },
    );
    expect(created.status).toBe(202);
    await jobFinished(tenant, 'aud', created.body.job_id);
    const refused = await new ApiClient(hcp.baseUrl, hcp.token('mallory', { other: 'admin' })).delete(
      `/v1/projects/aud/vms/${created.body.resource_id}`,
    );
    expect(refused.status).toBe(404);

    const trail = await eventually(async () => {
      const res = await auditor.get('/v1/ops/audit?project=aud&limit=200');
      return res.body.items.length >= 5 ? res.body.items : undefined;
    }, 'five audit records');
    // The create's answer and its job's first step race each other: the order of those two is open.
    const summary = trail
      .map((r: { actor: string; action: string; result: string }) => [r.actor, r.action, r.result])
      .reverse();
    expect(summary[0]).toEqual(['tom', 'POST /v1/projects/:project_id/vms', 'received']);
    expect(summary).toHaveLength(5);
    expect(summary).toEqual(
      expect.arrayContaining([
        ['tom', 'POST /v1/projects/:project_id/vms', 'accepted'],
        ['tom', 'vm.create', 'started'],
        ['tom', 'vm.create', 'succeeded'],
        ['mallory', 'DELETE /v1/projects/:project_id/vms/:vm_id', 'denied'],
      ]),
    );
    expect(trail.find((r: { result: string }) => r.result === 'denied')).toMatchObject({ error_code: 'NOT_FOUND' });
    expect(trail.find((r: { result: string }) => r.result === 'received')).toMatchObject({
      trace_id: 'trace-audit-1',
      target: { project_id: 'aud' },
      event_id: expect.any(String),
    });
    expect(trail.find((r: { result: string }) => r.result === 'succeeded').target).toEqual({
      job_id: created.body.job_id,
      vm_id: created.body.resource_id,
    });

    const byTarget = await auditor.get(`/v1/ops/audit?target=${created.body.job_id}`);
    expect(byTarget.body.items.map((r: { result: string }) => r.result).sort()).toEqual([
      'accepted',
      'started',
      'succeeded',
    ]);
    expect((await auditor.get('/v1/ops/audit?actor=mallory')).body.items).toHaveLength(1);
    expect((await auditor.get('/v1/ops/audit?from=2999-01-01T00:00:00Z')).body.items).toHaveLength(0);
    expect((await tenant.get('/v1/ops/audit')).status).toBe(403);
  });

  it("commits an accepted VM request's record in the transaction of the request it caused", async () => {
    const created = await tenant.post('/v1/projects/aud/vms', {
      name: 'carried',
      zone: 'local',
      ...(await seededChoice(tenant)),
    });
    expect(created.status).toBe(202);
    await jobFinished(tenant, 'aud', created.body.job_id);
    const stopped = await tenant.post(`/v1/projects/aud/vms/${created.body.resource_id}/actions/stop`, {});
    expect(stopped.status).toBe(202);

    for (const jobId of [created.body.job_id, stopped.body.job_id]) {
      // The request's two records and the job's JobQueued, each with the transaction that wrote it.
      const rows = await queryDatabase<{ type: string; tx_id: string }>(
        db.url,
        `SELECT type, tx_id::text FROM hcp_events
          WHERE stream_id = (SELECT stream_id FROM hcp_events WHERE type = 'RequestAnswered' AND data->>'job_id' = $1)
             OR (stream_id = $2 AND type = 'JobQueued')
          ORDER BY position`,
        [jobId, `job-${jobId}`],
      );
      expect(rows.map((r) => r.type)).toEqual(['RequestReceived', 'RequestAnswered', 'JobQueued']);
      expect(new Set(rows.map((r) => r.tx_id)).size).toBe(1);
    }
    // So that no record of this test's jobs is still on its way when the next one compares the trail.
    await jobFinished(tenant, 'aud', stopped.body.job_id);
  });

  it('replays the same records from the event store with the CLI', async () => {
    const root = path.join(__dirname, '..', '..');
    const { stdout } = await run(
      process.execPath,
      [path.join(root, 'scripts/ts-run.js'), 'src/cli/admin.ts', 'audit', 'replay', '--project', 'aud'],
      {
        cwd: root,
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, HCP_DATA_DIR: hcp.dataDir },
      },
    );
    const replayed = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // The read model follows the event store: the last job's records may still be projecting.
    const live = await eventually(async () => {
      const items = (await auditor.get('/v1/ops/audit?project=aud&limit=200')).body.items;
      return items.length >= replayed.length ? items : undefined;
    }, 'the audit read model to hold every replayed record');
    expect(replayed.map((r) => r.event_id)).toEqual(live.map((r: { event_id: string }) => r.event_id).reverse());
    expect(replayed).toEqual([...live].reverse());
  });

  it('meters allocation, power changes and deletion at the time the provider made them', async () => {
    const ops = new ApiClient(hcp.baseUrl, hcp.token('otto', {}, ['cloud-operator']));
    const created = await tenant.post('/v1/projects/aud/vms', {
      name: 'metered',
      zone: 'local',
      ...(await seededChoice(tenant)),
    });
    const vmId = created.body.resource_id;
    const job = await jobFinished(tenant, 'aud', created.body.job_id);
    const settle = (status: string) =>
      eventually(
        async () => ((await tenant.get(`/v1/projects/aud/vms/${vmId}`)).body.status === status ? true : undefined),
        status,
      );
    await settle('running');
    for (const action of ['stop', 'start']) {
      const res = await tenant.post(`/v1/projects/aud/vms/${vmId}/actions/${action}`, { force: true });
      await jobFinished(tenant, 'aud', res.body.job_id);
      await settle(action === 'stop' ? 'stopped' : 'running');
    }
    const del = await tenant.delete(`/v1/projects/aud/vms/${vmId}`);
    await jobFinished(tenant, 'aud', del.body.job_id);
    const records = await eventually(async () => {
      const res = await ops.get(`/v1/ops/metering?vm_id=${vmId}`);
      return res.body.items.length === 5 ? res.body.items : undefined;
    }, 'five metering records');
    expect(records.map((r: { kind: string }) => r.kind)).toEqual([
      'vm.allocated',
      'vm.powered_on',
      'vm.powered_off',
      'vm.powered_on',
      'vm.deleted',
    ]);
    expect(records[0]).toMatchObject({
      project_id: 'aud',
      zone: 'local',
      vm_id: vmId,
      resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 },
    });
    // The provider's change is recorded when the driver call returned: within the job, before it succeeded.
    expect(Date.parse(records[0].effective_at)).toBeGreaterThanOrEqual(Date.parse(job.started_at));
    expect(Date.parse(records[0].effective_at)).toBeLessThanOrEqual(Date.parse(job.finished_at));
    expect(new Set(records.map((r: { event_id: string }) => r.event_id)).size).toBe(5);
  });
});
