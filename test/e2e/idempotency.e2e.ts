import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { whileSimulatorHoldsVm } from '../support/simulator-hold';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

describe('Idempotency-Key', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;
  let choice: { image_id: string; flavor_id: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.02' } });
    api = new ApiClient(hcp.baseUrl, hcp.token('alice', { idem: 'admin', other: 'admin' }));
    choice = await seededChoice(api);
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  const createBody = (name: string) => ({ name, zone: 'local', ...choice });
  const countCreates = async (name: string) =>
    (
      await queryDatabase(db.url, `SELECT 1 FROM hcp_events WHERE type = 'VmCreateRequested' AND data->>'name' = $1`, [
        name,
      ])
    ).length;

  it('answers a repeated request with the first answer and runs it once', async () => {
    const headers = { 'idempotency-key': 'create-web-1' };
    const first = await api.post('/v1/projects/idem/vms', createBody('idem-1'), headers);
    const again = await api.post('/v1/projects/idem/vms', { ...createBody('idem-1') }, headers);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await countCreates('idem-1')).toBe(1);
  });

  it('refuses the same key with a different body with CONFLICT', async () => {
    const headers = { 'idempotency-key': 'create-web-2' };
    expect((await api.post('/v1/projects/idem/vms', createBody('idem-2'), headers)).status).toBe(202);
    const other = await api.post('/v1/projects/idem/vms', createBody('idem-2b'), headers);
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');
    expect(await countCreates('idem-2b')).toBe(0);
  });

  it('creates exactly one VM and one job from 50 concurrent requests with one key', async () => {
    const headers = { 'idempotency-key': 'stampede' };
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => api.post('/v1/projects/idem/vms', createBody('stampede'), headers)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(202));
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
    expect(await countCreates('stampede')).toBe(1);
    const { resource_id, job_id } = answers[0].body;
    expect((await jobFinished(api, 'idem', job_id)).status).toBe('succeeded');
    const jobs = await api.get(`/v1/projects/idem/jobs?resource_id=${resource_id}`);
    expect(jobs.body.items).toHaveLength(1);
    expect(await queryDatabase(db.url, 'SELECT 1 FROM simulator.vms WHERE hcp_id = $1', [resource_id])).toHaveLength(1);
  });

  it('scopes keys to the project', async () => {
    const headers = { 'idempotency-key': 'shared-key' };
    const a = await api.post('/v1/projects/idem/vms', createBody('scoped'), headers);
    const b = await api.post('/v1/projects/other/vms', createBody('scoped'), headers);
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.resource_id).not.toBe(a.body.resource_id);
  });

  it('replays a delete instead of refusing the second one', async () => {
    const created = await api.post('/v1/projects/idem/vms', createBody('to-delete'));
    await jobFinished(api, 'idem', created.body.job_id);
    await eventually(
      async () =>
        (await api.get(`/v1/projects/idem/vms/${created.body.resource_id}`)).body.status === 'running'
          ? true
          : undefined,
      'running',
    );
    // The simulator cannot remove the VM while the test holds it, so the delete stays in progress and the
    // VM `deleting` for every request below (at this latency the delete job would otherwise be over in ms).
    await whileSimulatorHoldsVm(db.url, created.body.resource_id, async () => {
      const headers = { 'idempotency-key': 'delete-once' };
      const first = await api.request(
        'DELETE',
        `/v1/projects/idem/vms/${created.body.resource_id}`,
        undefined,
        headers,
      );
      const second = await api.request(
        'DELETE',
        `/v1/projects/idem/vms/${created.body.resource_id}`,
        undefined,
        headers,
      );
      expect(first.status).toBe(202);
      expect(second.status).toBe(202);
      expect(second.body).toEqual(first.body);
      const withoutKey = await api.delete(`/v1/projects/idem/vms/${created.body.resource_id}`);
      expect(withoutKey.status).toBe(409);
    });
  });

  it('refuses a malformed key', async () => {
    for (const key of ['', 'x'.repeat(256), 'tab\there', 'é-accent']) {
      const res = await api.post('/v1/projects/idem/vms', createBody('bad-key'), { 'idempotency-key': key });
      expect([res.status, key]).toEqual([400, key]);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
    expect(await countCreates('bad-key')).toBe(0);
  });
});
