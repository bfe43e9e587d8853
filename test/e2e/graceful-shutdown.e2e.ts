import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { RawConnection } from '../support/raw-http';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/**
 * SIGTERM as a deployment sends it, with jobs inside slow provider calls and a client on a keep-alive
 * connection: HCP says it is draining, refuses new work on open connections and closes them, exits 0,
 * and the jobs it was running finish. A stop that cannot finish in time still ends at the grace period.
 */
describe('graceful shutdown', () => {
  let db: TestDatabase;
  const started: HcpProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    for (const hcp of started) await hcp.kill();
    started[0]?.removeDataDir();
    await db?.drop();
  });

  async function start(env: Record<string, string>, dataDir?: string): Promise<HcpProcess> {
    const hcp = await HcpProcess.start({
      databaseUrl: db.url,
      dataDir,
      env: { HCP_SIMULATOR_LATENCY_SCALE: '3', HCP_JOB_LEASE_MS: '3000', HCP_JOB_RETRY_BACKOFF_MS: '200', ...env },
    });
    started.push(hcp);
    return hcp;
  }

  it('drains on SIGTERM: readiness says draining, a keep-alive client gets 503 with Connection: close, the process exits 0 and its jobs finish later', async () => {
    // The drain delay keeps the listener open a while after SIGTERM, as for a load balancer.
    const hcp = await start({ HCP_SHUTDOWN_DRAIN_DELAY_MS: '3000', HCP_SHUTDOWN_GRACE_MS: '12000' });
    const token = hcp.token('dora', { drain: 'admin' });
    const api = new ApiClient(hcp.baseUrl, token);
    const choice = await seededChoice(api);
    const accepted: Array<{ job_id: string }> = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.post('/v1/projects/drain/vms', { name: `slow-${i}`, zone: 'local', ...choice });
      expect(res.status).toBe(202);
      accepted.push(res.body);
    }
    await eventually(async () => {
      const job = (await api.get(`/v1/projects/drain/jobs/${accepted[0].job_id}`)).body;
      return job.status === 'running' ? job : undefined;
    }, 'a job inside its provider call');

    const client = await RawConnection.open(hcp.baseUrl);
    const auth = { Authorization: `Bearer ${token}` };
    const before = await client.request('GET', '/v1/projects/drain/vms', auth);
    expect(before.status).toBe(200);
    expect(before.headers.connection).not.toBe('close');

    const exited = hcp.exited();
    process.kill(hcp.pid, 'SIGTERM');
    const ready = await eventually(async () => {
      const res = await api.get('/health/ready');
      return res.status === 503 ? res : undefined;
    }, 'readiness to go down');
    expect(ready.body).toEqual({ status: 'draining' });
    expect((await api.get('/health/live')).status).toBe(200);

    const refused = await client.request('POST', '/v1/projects/drain/vms', {
      ...auth,
      'Content-Type': 'application/json',
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.connection).toBe('close');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.body.error).toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: { reason: 'draining' },
      trace_id: expect.any(String),
    });
    await client.closed;

    expect(await exited).toEqual({ code: 0, signal: null });

    const again = await start({}, hcp.dataDir);
    for (const { job_id } of accepted) {
      expect((await jobFinished(api.asBase(again.baseUrl), 'drain', job_id, 45_000)).status).toBe('succeeded');
    }
  });

  it('exits non-zero at the end of the grace period when a request never finishes, saying what it waited for', async () => {
    const hcp = await start({ HCP_SHUTDOWN_GRACE_MS: '2000' }, started[0].dataDir);
    const client = await RawConnection.open(hcp.baseUrl);
    // A request whose body never comes: it stays in flight, so the orderly stop cannot finish.
    client.send(
      'POST',
      '/v1/projects/drain/vms',
      { Authorization: `Bearer ${hcp.token('dora', { drain: 'admin' })}`, 'Content-Type': 'application/json' },
      '{"name":',
      1000,
    );
    // A request on another connection answered after it: the server has read the first one's head.
    expect((await new ApiClient(hcp.baseUrl).get('/health/live')).status).toBe(200);

    const exited = hcp.exited();
    process.kill(hcp.pid, 'SIGTERM');
    expect(await exited).toEqual({ code: 1, signal: null });
    expect(hcp.logs).toMatch(/overran its grace period of 2000 ms while answering the requests in flight/);
    client.close();
  });
});
