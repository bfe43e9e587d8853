import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { EmbeddedPostgres, startEmbeddedPostgres } from '@hcp/local-postgres';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { freePort, HcpProcess } from '../support/hcp-process';

const quiet = { log: () => undefined, warn: () => undefined };

/**
 * PostgreSQL killed (SIGKILL of the postmaster, as a crash or an OOM kill would) under a running HCP:
 * clients get 503 PROVIDER_UNAVAILABLE with Retry-After instead of 500, liveness stays up and readiness
 * goes down, the process lives on; once PostgreSQL is back on the same data folder HCP serves again
 * without a restart, and every request it had answered 202 becomes a job that finishes.
 */
describe('database outage', () => {
  let dataDir: string;
  let port: number;
  let pg: EmbeddedPostgres | undefined;
  let hcp: HcpProcess | undefined;

  beforeAll(async () => {
    dataDir = await realpath(await mkdtemp(path.join(tmpdir(), 'hcp-outage-pg-')));
    port = await freePort();
    pg = await startEmbeddedPostgres({ dataDir, port, logger: quiet });
    hcp = await HcpProcess.start({
      databaseUrl: pg.connectionString,
      // Creates take a few seconds, so some are inside the provider call when PostgreSQL dies; short
      // leases and backoff so they are taken up again soon after it is back.
      env: { HCP_SIMULATOR_LATENCY_SCALE: '1', HCP_JOB_LEASE_MS: '2000', HCP_JOB_RETRY_BACKOFF_MS: '200' },
    });
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await pg?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After while PostgreSQL is down, and serves again when it is back', async () => {
    const api = new ApiClient(hcp!.baseUrl, hcp!.token('olga', { outage: 'admin' }));
    const choice = await seededChoice(api);
    const accepted: Array<{ job_id: string }> = [];
    for (let i = 0; i < 4; i++) {
      const res = await api.post('/v1/projects/outage/vms', { name: `before-${i}`, zone: 'local', ...choice });
      expect(res.status).toBe(202);
      accepted.push(res.body);
    }

    killPostmaster(dataDir);
    const down = await eventually(async () => {
      const res = await api.get('/v1/projects/outage/vms');
      return res.status === 503 ? res : undefined;
    }, 'a tenant request to answer 503');
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(down.body.error).toEqual({
      code: 'PROVIDER_UNAVAILABLE',
      message: expect.stringMatching(/database is unavailable.*Retry-After/),
      details: { dependency: 'database' },
      trace_id: expect.any(String),
    });
    const write = await api.post('/v1/projects/outage/vms', { name: 'during', zone: 'local', ...choice });
    expect(write.status).toBe(503);
    expect(write.body.error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(write.headers.get('retry-after')).not.toBeNull();
    expect((await api.get('/health/live')).status).toBe(200);
    expect((await api.get('/health/ready')).status).toBe(503);
    expect(hcp!.running).toBe(true);

    pg = await startEmbeddedPostgres({ dataDir, port, logger: quiet });
    await eventually(async () => ((await api.get('/health/ready')).status === 200 ? true : undefined), 'readiness');
    expect((await api.get('/v1/projects/outage/vms')).status).toBe(200);
    const after = await api.post('/v1/projects/outage/vms', { name: 'after', zone: 'local', ...choice });
    expect(after.status).toBe(202);
    accepted.push(after.body);

    for (const { job_id } of accepted) {
      expect((await jobFinished(api, 'outage', job_id, 45_000)).status).toBe('succeeded');
    }
    expect(hcp!.running).toBe(true);
    expect(hcp!.logs).not.toMatch(/unhandled (rejection|error)|uncaught exception/i);
  });
});

/** SIGKILL of the server's main process: no shutdown, its backends die with it, clients see their sockets drop. */
function killPostmaster(dataDir: string): void {
  const pid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(pid, 'SIGKILL');
}
