import { randomUUID } from 'node:crypto';
import { ApiClient, eventually } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

interface Audited {
  event_id: string;
  timestamp: string;
  actor: string | null;
  action: string;
  target: Record<string, string>;
  project_id: string | null;
  result: string;
  error_code?: string;
  trace_id: string | null;
  details: Record<string, unknown>;
}

const LIST_VMS = 'GET /v1/projects/:project_id/vms';
const CREATE_VM = 'POST /v1/projects/:project_id/vms';

/**
 * The audit trail cannot be poisoned by what a client sends, carries no bearer token, and has an
 * outcome for every audited request (issue #13: items 2 and 7, defects 1 and 2).
 */
describe('audit trail integrity', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let auditor: ApiClient;
  let tenant: ApiClient;
  let anonymous: ApiClient;

  /** The audit records of one trace id, once there are at least `count` of them. */
  const recordsOf = (traceId: string, count: number, query = 'limit=200'): Promise<Audited[]> =>
    eventually(async () => {
      const items = (await auditor.get(`/v1/ops/audit?${query}`)).body.items as Audited[];
      const mine = items.filter((r) => r.trace_id === traceId);
      return mine.length >= count ? mine : undefined;
    }, `${count} audit records of ${traceId}`);

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: { LOG_LEVEL: 'trace', HCP_SIMULATOR_LATENCY_SCALE: '0' },
    });
    auditor = new ApiClient(hcp.baseUrl, hcp.token('audrey', {}, ['security-auditor']));
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { integ: 'admin' }));
    anonymous = new ApiClient(hcp.baseUrl);
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('records a refusal on a 201-character project id with project_id null, and the trail goes on', async () => {
    const longProject = 'p'.repeat(201);
    const refused = await anonymous.get(`/v1/projects/${longProject}/vms`, { 'x-request-id': 'trace-long-project' });
    expect(refused.status).toBe(401);
    const created = await tenant.post(
      '/v1/projects/integ/vms',
      { name: 'after-poison', zone: 'local', ...(await seededChoice(tenant)) },
      { 'x-request-id': 'trace-after-poison' },
    );
    expect(created.status).toBe(202);

    // The create comes after the refusal in the event log: the projection got past the refusal.
    const createRecords = await recordsOf('trace-after-poison', 2, 'project=integ&limit=200');
    expect(
      createRecords
        .filter((r) => r.action === CREATE_VM)
        .map((r) => r.result)
        .sort(),
    ).toEqual(['accepted', 'received']);

    const [refusal] = await recordsOf('trace-long-project', 1, `action=${encodeURIComponent(LIST_VMS)}&limit=200`);
    expect(refusal).toMatchObject({
      actor: null,
      action: LIST_VMS,
      project_id: null,
      result: 'denied',
      error_code: 'UNAUTHORIZED',
      target: {},
      details: { route: '/v1/projects/:project_id/vms', rejected: { project_id: { length: 201 } } },
    });
    expect(JSON.stringify(refusal).length).toBeLessThan(2_000);
  });

  it('refuses a token in ?access_token= or a body field, and keeps it out of events, audit records and logs', async () => {
    const token = hcp.token('tina', { integ: 'admin' });
    const byQuery = await anonymous.get(`/v1/projects/integ/vms?access_token=${token}`, {
      'x-request-id': 'trace-query-token',
    });
    expect(byQuery.status).toBe(401);
    const byBody = await anonymous.post(
      '/v1/projects/integ/vms',
      { access_token: token, name: 'smuggled', zone: 'local', ...(await seededChoice(tenant)) },
      { 'x-request-id': 'trace-body-token' },
    );
    expect(byBody.status).toBe(401);
    // The same token in the header is fine: the refusals above are about where it was, not what.
    expect((await tenant.as(token).get('/v1/projects/integ/vms')).status).toBe(200);
    const consoleMarker = `CONSOLE-TOKEN-${randomUUID()}`;
    await anonymous.get(`/v1/console/${randomUUID()}/websocket?token=${consoleMarker}`);

    const [refusal] = await recordsOf('trace-query-token', 1, `action=${encodeURIComponent(LIST_VMS)}&limit=200`);
    expect(refusal).toMatchObject({ result: 'denied', error_code: 'UNAUTHORIZED', project_id: 'integ' });
    await recordsOf('trace-body-token', 1, `action=${encodeURIComponent(CREATE_VM)}&limit=200`);

    const signature = token.split('.')[2];
    const events = await queryDatabase<{ n: string }>(
      db.url,
      `SELECT count(*)::text AS n FROM hcp_events WHERE data::text LIKE $1 OR metadata::text LIKE $1`,
      [`%${signature}%`],
    );
    expect(events[0].n).toBe('0');
    const audit = JSON.stringify((await auditor.get('/v1/ops/audit?limit=200')).body.items);
    expect(audit.includes(signature)).toBe(false);
    for (const secret of [token, signature, consoleMarker]) {
      expect(hcp.logs.includes(secret) ? secret : 'absent').toBe('absent');
    }
  });

  it('records the outcome of each audited request: accepted with its job, failed with its error code', async () => {
    const choice = await seededChoice(tenant);
    const accepted = await tenant.post(
      '/v1/projects/integ/vms',
      { name: 'outcome-ok', zone: 'local', ...choice },
      { 'x-request-id': 'trace-outcome-ok' },
    );
    expect(accepted.status).toBe(202);
    const failed = await tenant.post(
      '/v1/projects/integ/vms',
      { name: 'outcome-bad', zone: 'local', ...choice, image_id: randomUUID() },
      { 'x-request-id': 'trace-outcome-bad' },
    );
    expect(failed.status).toBe(400);

    const ok = await recordsOf('trace-outcome-ok', 2, 'project=integ&limit=200');
    expect(ok.find((r) => r.result === 'accepted')).toMatchObject({
      actor: 'tina',
      action: CREATE_VM,
      project_id: 'integ',
      target: { project_id: 'integ', job_id: accepted.body.job_id },
      details: { status: 202 },
    });
    expect(ok.find((r) => r.result === 'accepted')).not.toHaveProperty('error_code');

    const bad = await recordsOf('trace-outcome-bad', 2, 'project=integ&limit=200');
    expect(bad.map((r) => r.result).sort()).toEqual(['failed', 'received']);
    expect(bad.find((r) => r.result === 'failed')).toMatchObject({
      action: CREATE_VM,
      error_code: failed.body.error.code,
      details: { status: 400 },
    });
    for (const record of [...ok, ...bad]) {
      expect(Object.keys(record).sort()).toEqual(
        expect.arrayContaining([
          'action',
          'actor',
          'details',
          'event_id',
          'project_id',
          'result',
          'target',
          'timestamp',
          'trace_id',
        ]),
      );
    }
  });
});
