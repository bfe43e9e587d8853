import { type HcpClient, newIdempotencyKey, unwrap } from '@hcp/client';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { whileSimulatorHoldsVm } from '../support/simulator-hold';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

describe('Idempotency-Key', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;
  let client: HcpClient;
  let choice: { image_id: string; flavor_id: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.02' } });
    api = new ApiClient(hcp.baseUrl, hcp.token('alice', { idem: 'admin', other: 'admin' }));
    client = api.typed();
    choice = await seededChoice(api);
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  const createBody = (name: string) => ({ name, zone: 'local', ...choice });
  /** POST a create with an Idempotency-Key through @hcp/client; answers its status, body and headers. */
  const createVm = async (project: string, name: string, key?: string) => {
    const { data, error, response } = await client.POST('/v1/projects/{project_id}/vms', {
      params: { path: { project_id: project }, header: key === undefined ? undefined : { 'Idempotency-Key': key } },
      body: createBody(name),
    });
    return { status: response.status, body: data, error, headers: response.headers };
  };
  const countCreates = async (name: string) =>
    (
      await queryDatabase(db.url, `SELECT 1 FROM hcp_events WHERE type = 'VmCreateRequested' AND data->>'name' = $1`, [
        name,
      ])
    ).length;

  it('answers a repeated request with the first answer and runs it once', async () => {
    const key = newIdempotencyKey();
    const first = await createVm('idem', 'idem-1', key);
    const again = await createVm('idem', 'idem-1', key);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await countCreates('idem-1')).toBe(1);
  });

  it('records the replayed request in the audit trail too, as answered with the first job', async () => {
    const key = newIdempotencyKey();
    const first = await createVm('idem', 'idem-audited', key);
    const again = await createVm('idem', 'idem-audited', key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const answered = await queryDatabase<{ status: string; job_id: string }>(
      db.url,
      `SELECT data->>'status' AS status, data->>'job_id' AS job_id FROM hcp_events
       WHERE type = 'RequestAnswered' AND data->>'job_id' = $1`,
      [first.body!.job_id],
    );
    expect(answered).toEqual([
      { status: '202', job_id: first.body!.job_id },
      { status: '202', job_id: first.body!.job_id },
    ]);
  });

  it('refuses the same key with a different body with CONFLICT', async () => {
    const key = 'create-web-2';
    expect((await createVm('idem', 'idem-2', key)).status).toBe(202);
    const other = await createVm('idem', 'idem-2b', key);
    expect(other.status).toBe(409);
    expect(other.error?.error.code).toBe('CONFLICT');
    expect(await countCreates('idem-2b')).toBe(0);
  });

  it('creates exactly one VM and one job from 50 concurrent requests with one key', async () => {
    const key = newIdempotencyKey();
    const answers = await Promise.all(Array.from({ length: 50 }, () => createVm('idem', 'stampede', key)));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(202));
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
    expect(await countCreates('stampede')).toBe(1);
    const { resource_id, job_id } = answers[0].body!;
    expect((await jobFinished(client, 'idem', job_id)).status).toBe('succeeded');
    const jobs = unwrap(
      await client.GET('/v1/projects/{project_id}/jobs', {
        params: { path: { project_id: 'idem' }, query: { resource_id } },
      }),
    );
    expect(jobs.items).toHaveLength(1);
    expect(await queryDatabase(db.url, 'SELECT 1 FROM simulator.vms WHERE hcp_id = $1', [resource_id])).toHaveLength(1);
  });

  it('scopes keys to the project', async () => {
    const a = await createVm('idem', 'scoped', 'shared-key');
    const b = await createVm('other', 'scoped', 'shared-key');
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body!.resource_id).not.toBe(a.body!.resource_id);
  });

  it('replays a delete instead of refusing the second one', async () => {
    const created = unwrap(
      await client.POST('/v1/projects/{project_id}/vms', {
        params: { path: { project_id: 'idem' } },
        body: createBody('to-delete'),
      }),
    );
    const vm = { project_id: 'idem', vm_id: created.resource_id };
    await jobFinished(client, 'idem', created.job_id);
    await eventually(
      async () =>
        unwrap(await client.GET('/v1/projects/{project_id}/vms/{vm_id}', { params: { path: vm } })).status === 'running'
          ? true
          : undefined,
      'running',
    );
    // The simulator cannot remove the VM while the test holds it, so the delete stays in progress and the
    // VM `deleting` for every request below (at this latency the delete job would otherwise be over in ms).
    await whileSimulatorHoldsVm(db.url, created.resource_id, async () => {
      const remove = (key?: string) =>
        client.DELETE('/v1/projects/{project_id}/vms/{vm_id}', {
          params: { path: vm, header: key === undefined ? undefined : { 'Idempotency-Key': key } },
        });
      const first = await remove('delete-once');
      const second = await remove('delete-once');
      expect(first.response.status).toBe(202);
      expect(second.response.status).toBe(202);
      expect(second.data).toEqual(first.data);
      const withoutKey = await remove();
      expect(withoutKey.response.status).toBe(409);
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
