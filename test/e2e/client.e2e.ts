import { HcpApiError, type HcpClient, newIdempotencyKey, unwrap, waitForJob } from '@hcp/client';
import { ApiClient } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/** @hcp/client against a real HCP: what a gateway relies on beyond the types. */
describe('@hcp/client against HCP', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let client: HcpClient;
  let choice: { image_id: string; flavor_id: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' } });
    const api = new ApiClient(hcp.baseUrl, hcp.token('gina', { gw: 'admin' }));
    client = api.typed();
    choice = await seededChoice(api);
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it("turns HCP's error answers into HcpApiError with the code, details and the request's id", async () => {
    const missing = await client.GET('/v1/projects/{project_id}/vms/{vm_id}', {
      params: { path: { project_id: 'gw', vm_id: '00000000-0000-4000-8000-000000000000' } },
      headers: { 'x-request-id': 'gw-req-1' },
    });
    expect(() => unwrap(missing)).toThrow(HcpApiError);
    expect(() => unwrap(missing)).toThrow(
      expect.objectContaining({ status: 404, code: 'NOT_FOUND', requestId: 'gw-req-1' }),
    );

    const invalid = await client.POST('/v1/projects/{project_id}/vms', {
      params: { path: { project_id: 'gw' } },
      body: { name: 'bad', zone: 'local', image_id: 'not-a-uuid', flavor_id: choice.flavor_id },
    });
    expect(() => unwrap(invalid)).toThrow(
      expect.objectContaining({
        status: 400,
        code: 'INVALID_REQUEST',
        details: expect.objectContaining({ fields: [expect.objectContaining({ field: 'image_id' })] }),
      }),
    );

    const anonymous = await new ApiClient(hcp.baseUrl).typed().GET('/v1/zones');
    expect(() => unwrap(anonymous)).toThrow(expect.objectContaining({ status: 401, code: 'UNAUTHORIZED' }));
  });

  it('waits for a job straight after the 202, replayed answers included', async () => {
    const key = newIdempotencyKey();
    const create = () =>
      client.POST('/v1/projects/{project_id}/vms', {
        params: { path: { project_id: 'gw' }, header: { 'Idempotency-Key': key } },
        body: { name: 'gw-1', zone: 'local', ...choice },
      });
    const accepted = unwrap(await create());
    const statuses: string[] = [];
    // No pause before the first read: the job read model may not have the job yet (404 grace).
    const job = await waitForJob(client, 'gw', accepted.job_id, {
      initialDelayMs: 20,
      maxDelayMs: 200,
      timeoutMs: 60_000,
      onProgress: (j) => statuses.push(j.status),
    });
    expect(job).toMatchObject({
      id: accepted.job_id,
      type: 'vm.create',
      status: 'succeeded',
      resource_id: accepted.resource_id,
    });
    expect(statuses.at(-1)).toBe('succeeded');
    expect(new Set(statuses).size).toBe(statuses.length);
    expect(unwrap(await create())).toEqual(accepted);
  });
});
