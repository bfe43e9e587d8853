import * as http from 'node:http';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { connectConsole, refusedUpgrade } from '../support/console-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/** Short enough to test expiry, long enough for a client on a busy machine to connect right after opening. */
const CONNECT_TIMEOUT_S = 4;
/** The shortest maximum length HCP accepts; every other test here is done with its console well before. */
const MAX_SESSION_S = 10;

/**
 * Console sessions on the embedded default's simulator: the session answer, one websocket connection
 * through HCP's proxy to the provider's RFB server, and every way a connection is refused or ended.
 */
describe('console sessions', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let tenant: ApiClient;
  let auditor: ApiClient;
  let choice: { image_id: string; flavor_id: string };
  let runningVm: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0',
        HCP_CONSOLE_CONNECT_TIMEOUT_S: String(CONNECT_TIMEOUT_S),
        HCP_CONSOLE_MAX_SESSION_S: String(MAX_SESSION_S),
        LOG_LEVEL: 'info',
      },
    });
    tenant = new ApiClient(hcp.baseUrl, hcp.token('cora', { con: 'operator' }));
    auditor = new ApiClient(hcp.baseUrl, hcp.token('audrey', {}, ['security-auditor']));
    choice = await seededChoice(new ApiClient(hcp.baseUrl, hcp.token('setup', { con: 'admin' })));
    runningVm = await vm('running');
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  async function vm(state: 'running' | 'stopped', project = 'con'): Promise<string> {
    const admin = new ApiClient(hcp.baseUrl, hcp.token('setup', { [project]: 'admin' }));
    const res = await admin.post(`/v1/projects/${project}/vms`, {
      name: `console-${state}`,
      zone: 'local',
      ...choice,
      power_on: state === 'running',
    });
    expect((await jobFinished(admin, project, res.body.job_id)).status).toBe('succeeded');
    await eventually(
      async () =>
        (await admin.get(`/v1/projects/${project}/vms/${res.body.resource_id}`)).body.status === state
          ? true
          : undefined,
      `VM ${state}`,
    );
    return res.body.resource_id;
  }

  const open = (vmId: string, type = 'vnc', api = tenant, project = 'con') =>
    api.post(`/v1/projects/${project}/vms/${vmId}/console`, { type });

  const trailOf = (sessionId: string, count: number) =>
    eventually(async () => {
      const items = (await auditor.get(`/v1/ops/audit?target=${sessionId}&limit=50`)).body.items as Array<{
        action: string;
        result: string;
        actor: string;
        details: Record<string, unknown>;
      }>;
      return items.length >= count
        ? items.sort((a, b) =>
            (a as unknown as { timestamp: string }).timestamp.localeCompare(
              (b as unknown as { timestamp: string }).timestamp,
            ),
          )
        : undefined;
    }, `${count} audit records of console session ${sessionId}`);

  it('opens a session whose URL is HCP itself, and relays the RFB handshake to the VM console through it', async () => {
    const before = Date.now();
    const res = await open(runningVm);
    expect(res.status).toBe(201);
    const { session_id, type, url, token, expires_at } = res.body;
    expect(type).toBe('vnc');
    expect(url).toBe(`${hcp.baseUrl.replace('http', 'ws')}/v1/console/${session_id}/websocket`);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(expires_at) - before).toBeGreaterThan((CONNECT_TIMEOUT_S - 1) * 1000);
    expect(Date.parse(expires_at) - before).toBeLessThanOrEqual(CONNECT_TIMEOUT_S * 1000 + 2000);

    const client = await connectConsole(url, token);
    expect(client.serverInit.width).toBeGreaterThan(0);
    expect(client.serverInit.height).toBeGreaterThan(0);
    expect(client.serverInit.bitsPerPixel).toBe(32);
    client.ws.close();
    await client.closed;

    const trail = await trailOf(session_id, 3);
    expect(trail.map((r) => [r.action, r.result])).toEqual([
      ['console.open', 'succeeded'],
      ['console.connect', 'succeeded'],
      ['console.close', 'succeeded'],
    ]);
    expect(trail.every((r) => r.actor === 'cora')).toBe(true);
    expect(trail[2].details).toMatchObject({ reason: 'client_closed' });
    expect((trail[2].details.bytes_to_client as number) > 0).toBe(true);
    expect(JSON.stringify(trail)).not.toContain(token);
  });

  it('refuses a second use of the token, during the first connection and after it', async () => {
    const { url, token, session_id } = (await open(runningVm)).body;
    const first = await connectConsole(url, token);
    const second = await refusedUpgrade(url, token);
    expect(second.status).toBe(401);
    expect(second.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('used already') });
    first.ws.close();
    await first.closed;
    // The client sees the close before the server has recorded it: "after" is once the close is on the trail.
    expect((await trailOf(session_id, 4)).map((r) => r.action)).toContain('console.close');
    expect((await refusedUpgrade(url, token)).status).toBe(401);
    // Recorded while the session is live, as the anonymous caller's; after it closed, only answered.
    const trail = await trailOf(session_id, 4);
    const refusals = trail.filter((r) => r.result === 'denied' && r.details.reason === 'token_used');
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({
      actor: 'anonymous',
      error_code: 'UNAUTHORIZED',
      details: { client_address: '127.0.0.1' },
    });
  });

  it('refuses an expired token', async () => {
    const { url, token, expires_at } = (await open(runningVm)).body;
    await new Promise((r) => setTimeout(r, Date.parse(expires_at) - Date.now() + 500));
    const refused = await refusedUpgrade(url, token);
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toContain('expired');
  });

  it('refuses a wrong token without spending the right one', async () => {
    const { url, token } = (await open(runningVm)).body;
    expect((await refusedUpgrade(url, 'x'.repeat(43))).status).toBe(401);
    expect((await refusedUpgrade(url, '')).status).toBe(401);
    const client = await connectConsole(url, token);
    client.ws.close();
    await client.closed;
  });

  it('refuses a malformed websocket handshake without spending the token', async () => {
    const { url, token } = (await open(runningVm)).body;
    const target = new URL(`${url}?token=${token}`.replace(/^ws/, 'http'));
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(target, {
        headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13' },
      });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(400);
    const client = await connectConsole(url, token);
    client.ws.close();
    await client.closed;
  });

  it('answers 404 for an unknown session and for another project’s VM', async () => {
    const unknown = await refusedUpgrade(
      `${hcp.baseUrl.replace('http', 'ws')}/v1/console/00000000-0000-4000-8000-000000000000/websocket`,
      'x',
    );
    expect(unknown.status).toBe(404);
    const foreignVm = await vm('running', 'other');
    expect((await open(foreignVm)).status).toBe(404);
    expect((await open(foreignVm, 'vnc', tenant, 'other')).status).toBe(404);
  });

  it('refuses a stopped VM when opening, and when the VM stopped before the token was used', async () => {
    const stopped = await vm('stopped');
    const refused = await open(stopped);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');

    const soonStopped = await vm('running');
    const { url, token, session_id } = (await open(soonStopped)).body;
    const stop = await tenant.post(`/v1/projects/con/vms/${soonStopped}/actions/stop`, { force: true });
    expect((await jobFinished(tenant, 'con', stop.body.job_id)).status).toBe('succeeded');
    const late = await refusedUpgrade(url, token);
    expect(late.status).toBe(409);
    const trail = await trailOf(session_id, 3);
    expect(trail.at(-1)).toMatchObject({ action: 'console.close', details: { reason: 'vm_not_running' } });
  });

  it('closes a connected console when its VM stops', async () => {
    const vmId = await vm('running');
    const { url, token, session_id } = (await open(vmId)).body;
    const client = await connectConsole(url, token);
    const stop = await tenant.post(`/v1/projects/con/vms/${vmId}/actions/stop`, { force: true });
    expect((await jobFinished(tenant, 'con', stop.body.job_id)).status).toBe('succeeded');
    // Whoever notices first closes it: the provider ending its console as the VM powers off, or HCP
    // seeing VmStopped; either way the tenant gets a close code and the trail a reason.
    expect([1000, 4002]).toContain(await client.closed);
    const trail = await trailOf(session_id, 3);
    expect(trail.at(-1)).toMatchObject({
      action: 'console.close',
      details: { reason: expect.stringMatching(/^(vm_not_running|provider_closed)$/) },
    });
  });

  it('closes a connected console at its maximum length', async () => {
    const { url, token, session_id } = (await open(runningVm)).body;
    const client = await connectConsole(url, token);
    expect(await client.closed).toBe(4001);
    const trail = await trailOf(session_id, 3);
    expect(trail.at(-1)).toMatchObject({ action: 'console.close', details: { reason: 'session_expired' } });
    const connectedAt = Date.parse((trail[1] as unknown as { timestamp: string }).timestamp);
    const closedAt = Date.parse((trail[2] as unknown as { timestamp: string }).timestamp);
    expect(closedAt - connectedAt).toBeGreaterThanOrEqual(MAX_SESSION_S * 1000);
  });

  it('refuses a console type the VM’s zone does not offer, naming it', async () => {
    const res = await open(runningVm, 'spice');
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'FEATURE_NOT_SUPPORTED', details: { missing: ['console:spice'] } });
    expect((await open(runningVm, 'telnet')).status).toBe(400);
  });

  it('needs the operator role', async () => {
    const viewer = new ApiClient(hcp.baseUrl, hcp.token('vic', { con: 'viewer' }));
    expect((await open(runningVm, 'vnc', viewer)).status).toBe(403);
  });

  it('serves the webconsole page for a webconsole session, with the token only in the URL fragment', async () => {
    const res = await open(runningVm, 'webconsole');
    expect(res.status).toBe(201);
    const { session_id, url, token } = res.body;
    expect(url).toBe(`${hcp.baseUrl}/console/${session_id}#token=${token}`);
    const page = await fetch(url.split('#')[0]);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('/console/assets/webconsole.js');
    expect(html).not.toContain(token);
    const script = await fetch(`${hcp.baseUrl}/console/assets/webconsole.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    const rfbModule = await fetch(`${hcp.baseUrl}/console/assets/novnc/core/rfb.js`);
    expect(rfbModule.status).toBe(200);
    expect((await fetch(`${hcp.baseUrl}/console/assets/novnc/package.json`)).status).toBe(404);
    expect((await fetch(`${hcp.baseUrl}/console/assets/novnc/core/../../package.json`)).status).toBe(404);
  });

  it('keeps the token out of the logs', async () => {
    const { url, token } = (await open(runningVm)).body;
    const client = await connectConsole(url, token);
    client.ws.close();
    await client.closed;
    await refusedUpgrade(url, token);
    expect(hcp.logs).toContain('console connected');
    expect(hcp.logs).not.toContain(token);
  });

  it('takes a session opened on one instance through another, which closes it when it shuts down', async () => {
    const other = await HcpProcess.start({
      databaseUrl: db.url,
      env: { HCP_SIMULATOR_LATENCY_SCALE: '0', HCP_SEED_CATALOG: 'false' },
    });
    try {
      const { url, token, session_id } = (await open(runningVm)).body;
      const client = await connectConsole(
        url.replace(hcp.baseUrl.replace('http', 'ws'), other.baseUrl.replace('http', 'ws')),
        token,
      );
      expect(client.serverInit.width).toBeGreaterThan(0);
      expect((await refusedUpgrade(url, token)).status).toBe(401);
      await other.stop();
      expect(await client.closed).toBe(1001);
      const trail = await trailOf(session_id, 4);
      expect(trail.at(-1)).toMatchObject({ action: 'console.close', details: { reason: 'instance_stopped' } });
    } finally {
      await other.stop();
      other.removeDataDir();
    }
  });
});
