import { ApiClient, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const USER_DATA_MARKER = 'UD-MARKER-5b1e77';
const PASSWORD_MARKER = 'PW-MARKER-90ac3f';

/** Logs at their most verbose carry trace ids and actors, never tokens, credentials or user data. */
describe('log redaction', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: { LOG_LEVEL: 'trace', HCP_SIMULATOR_LATENCY_SCALE: '0' },
    });
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('keeps planted secrets out of every log line, with trace id and actor on request lines', async () => {
    const token = hcp.token('lena', { logs: 'admin' });
    const api = new ApiClient(hcp.baseUrl, token);
    const userData = Buffer.from(`#cloud-config\npassword: ${USER_DATA_MARKER}\n`).toString('base64');
    const created = await api.post(
      '/v1/projects/logs/vms',
      { name: 'quiet', zone: 'local', ...(await seededChoice(api)), user_data: userData },
      { 'x-request-id': 'trace-log-1' },
    );
    expect(created.status).toBe(202);
    await jobFinished(api, 'logs', created.body.job_id);
    const infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin']));
    expect(
      (
        await infra.post('/v1/ops/providers', {
          name: 'logged',
          type: 'simulator',
          credentials: { password: PASSWORD_MARKER },
        })
      ).status,
    ).toBe(201);
    await new ApiClient(hcp.baseUrl, 'garbage-token-MARKER').get('/v1/projects/logs/vms');

    const logs = hcp.logs;
    for (const secret of [
      token,
      token.split('.')[2],
      USER_DATA_MARKER,
      userData,
      PASSWORD_MARKER,
      'garbage-token-MARKER',
    ]) {
      expect(logs.includes(secret) ? secret : 'absent').toBe('absent');
    }
    const requestLine = logs
      .split('\n')
      .find((l) => l.includes('"trace_id":"trace-log-1"') && l.includes('request completed'));
    expect(requestLine).toBeDefined();
    expect(JSON.parse(requestLine!)).toMatchObject({
      trace_id: 'trace-log-1',
      actor: 'lena',
      project_id: 'logs',
      req: { headers: { authorization: '[redacted]' } },
    });
  });
});
