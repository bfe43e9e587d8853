import { request } from 'node:http';
import { WebSocket } from 'ws';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const PROJECT = 'edge';

/** A request with the Host header of our choosing (fetch does not let a caller set Host). */
function withHost(
  baseUrl: string,
  path: string,
  host: string,
  token: string,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(baseUrl);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        path,
        method: 'POST',
        headers: {
          host,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The status a console websocket upgrade gets with this Origin: 101 when HCP accepts it. */
function upgradeStatus(url: string, token: string, origin: string): Promise<{ status: number; body: any }> {
  const ws = new WebSocket(`${url}?token=${encodeURIComponent(token)}`, ['binary'], { origin });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.terminate();
      resolve({ status: 101, body: null });
    });
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        ws.terminate();
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      });
    });
    ws.once('error', reject);
  });
}

/** What HCP takes from the edge of a request: its media type, its Host, its Origin (issue #13, items 6 and 8). */
describe('request boundaries', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let admin: ApiClient;
  let adminToken: string;
  let choice: { image_id: string; flavor_id: string };
  let runningVm: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    // No HCP_PUBLIC_URL: dev mode, where console URLs come from the request's Host if it is allowed.
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0' } });
    adminToken = hcp.token('edgar', { [PROJECT]: 'admin' });
    admin = new ApiClient(hcp.baseUrl, adminToken);
    choice = await seededChoice(admin);
    const created = await admin.post(`/v1/projects/${PROJECT}/vms`, { name: 'edge-1', zone: 'local', ...choice });
    expect(created.status).toBe(202);
    expect((await jobFinished(admin, PROJECT, created.body.job_id)).status).toBe('succeeded');
    runningVm = created.body.resource_id;
    await eventually(
      async () =>
        (await admin.get(`/v1/projects/${PROJECT}/vms/${runningVm}`)).body.status === 'running' ? true : undefined,
      'the VM running',
    );
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  describe('media types', () => {
    it.each([
      ['text/plain', 'text/plain;charset=UTF-8'],
      ['a form', 'application/x-www-form-urlencoded'],
    ])(
      'answers a body sent as %s with 415 UNSUPPORTED_MEDIA_TYPE in the envelope, and runs nothing',
      async (_, type) => {
        const body = JSON.stringify({ name: `never-${type.length}`, zone: 'local', ...choice });
        const res = await admin.raw('POST', `/v1/projects/${PROJECT}/vms`, body, { 'content-type': type });
        expect(res.status).toBe(415);
        expect(res.body).toEqual({
          error: {
            code: 'UNSUPPORTED_MEDIA_TYPE',
            message: expect.any(String),
            details: { content_type: type.split(';')[0].toLowerCase() },
            trace_id: res.headers.get('x-request-id'),
          },
        });
        // A JSON create after it: once the list shows that one, it would show an earlier create too.
        const after = await admin.post(`/v1/projects/${PROJECT}/vms`, {
          name: `after-${type.length}`,
          zone: 'local',
          ...choice,
        });
        expect(after.status).toBe(202);
        const names = await eventually(async () => {
          const items = (await admin.get(`/v1/projects/${PROJECT}/vms?limit=200`)).body.items as Array<{
            name: string;
          }>;
          return items.some((v) => v.name === `after-${type.length}`) ? items.map((v) => v.name) : undefined;
        }, 'the JSON create listed');
        expect(names).not.toContain(`never-${type.length}`);
      },
    );

    it('answers a stop sent as a form with 415, leaving the VM running', async () => {
      const res = await admin.raw('POST', `/v1/projects/${PROJECT}/vms/${runningVm}/actions/stop`, 'force=true', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect([res.status, res.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
      const jobs = (await admin.get(`/v1/projects/${PROJECT}/jobs?resource_id=${runningVm}`)).body.items;
      expect(jobs.map((j: { type: string }) => j.type)).toEqual(['vm.create']);
    });

    it('still reads JSON with a charset, and bodiless requests of any type', async () => {
      const res = await admin.raw('POST', `/v1/projects/${PROJECT}/vms/${runningVm}/console`, '{"type":"vnc"}', {
        'content-type': 'application/json; charset=utf-8',
      });
      expect(res.status).toBe(201);
      expect((await admin.get(`/v1/projects/${PROJECT}/vms`, { 'content-type': 'text/plain' })).status).toBe(200);
    });
  });

  describe('console URLs and origins', () => {
    const consolePath = () => `/v1/projects/${PROJECT}/vms/${runningVm}/console`;

    it.each(['evil.example/x?', 'evil.example', 'localhost@evil.example'])(
      'never builds a console URL from the Host %s: 400 INVALID_REQUEST, no URL, no token',
      async (host) => {
        for (const type of ['vnc', 'webconsole']) {
          const res = await withHost(hcp.baseUrl, consolePath(), host, adminToken, { type });
          expect(res.status).toBe(400);
          expect(JSON.parse(res.text).error.code).toBe('INVALID_REQUEST');
          expect(res.text).not.toContain('evil.example');
          expect(res.text).not.toContain('token');
        }
      },
    );

    it('builds the console URL from a loopback Host, on its port', async () => {
      const { port } = new URL(hcp.baseUrl);
      const res = await withHost(hcp.baseUrl, consolePath(), `localhost:${port}`, adminToken, { type: 'vnc' });
      expect(res.status).toBe(201);
      const { url, session_id } = JSON.parse(res.text);
      expect(url).toBe(`ws://localhost:${port}/v1/console/${session_id}/websocket`);
    });

    it('refuses a console websocket from a foreign Origin before spending its token', async () => {
      const opened = await admin.post(consolePath(), { type: 'vnc' });
      expect(opened.status).toBe(201);
      const refused = await upgradeStatus(opened.body.url, opened.body.token, 'https://evil.example');
      expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN']);
      // The same token still opens the console from HCP's own origin: the refusal did not spend it.
      expect((await upgradeStatus(opened.body.url, opened.body.token, hcp.baseUrl)).status).toBe(101);
    });
  });
});
