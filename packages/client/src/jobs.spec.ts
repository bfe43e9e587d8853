import { closedPort, envelope, jobIn, ScriptedServer } from '../test/scripted-server.fixture';
import { createHcpClient, HcpApiError, HcpTimeoutError, type Job, waitForJob } from './index';

// Short pauses keep the suite fast; the assertions never depend on how fast the machine is, only on order
// and on lower bounds (the client must wait at least what the server asked).
const FAST = { initialDelayMs: 5, maxDelayMs: 20 };

describe('waitForJob', () => {
  let server: ScriptedServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('reads the job until it succeeds, reporting each change once', async () => {
    const states = [jobIn('queued'), jobIn('queued'), jobIn('running', 1), jobIn('running', 1), jobIn('succeeded', 1)];
    server = await ScriptedServer.start((_req, i) => ({ status: 200, body: states[Math.min(i, states.length - 1)] }));
    const seen: Job['status'][] = [];
    const job = await waitForJob(createHcpClient({ baseUrl: server.baseUrl, token: 't' }), 'p1', 'j1', {
      ...FAST,
      onProgress: (j) => seen.push(j.status),
    });
    expect(job.status).toBe('succeeded');
    expect(seen).toEqual(['queued', 'running', 'succeeded']);
    expect(server.requests).toHaveLength(5);
    expect(new Set(server.requests.map((r) => `${r.method} ${r.url} ${r.headers.authorization}`))).toEqual(
      new Set(['GET /v1/projects/p1/jobs/j1 Bearer t']),
    );
  });

  it('resolves with a failed job, error included: the caller decides what a failure means', async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: jobIn('failed', 3) }));
    const job = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', FAST);
    expect(job).toMatchObject({ status: 'failed', error: { code: 'PROVIDER_TIMEOUT', retryable: true } });
  });

  it.each([429, 503])('waits the Retry-After of a %i, however short its own backoff', async (status) => {
    server = await ScriptedServer.start((_req, i) =>
      i === 0
        ? {
            status,
            headers: { 'retry-after': '1' },
            body: envelope(status === 429 ? 'RATE_LIMITED' : 'PROVIDER_UNAVAILABLE', 'later'),
          }
        : { status: 200, body: jobIn('succeeded') },
    );
    const job = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', FAST);
    expect(job.status).toBe('succeeded');
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1].at - server.requests[0].at).toBeGreaterThanOrEqual(1_000);
  });

  it('pauses between reads at least half of a step that doubles up to maxDelayMs', async () => {
    const reads = 6;
    server = await ScriptedServer.start((_req, i) => ({
      status: 200,
      body: jobIn(i < reads - 1 ? 'queued' : 'succeeded'),
    }));
    await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', {
      initialDelayMs: 40,
      maxDelayMs: 160,
    });
    const gaps = server.requests.slice(1).map((r, i) => r.at - server!.requests[i].at);
    // Pause n is at least half of min(160, 40 * 2^n): 20, 40, 80, 80, 80 ms (timer slack aside).
    const floors = [20, 40, 80, 80, 80];
    for (const [i, gap] of gaps.entries()) expect(gap).toBeGreaterThanOrEqual(floors[i] - 5);
  });

  it('keeps reading through a 502 and an unanswered connection', async () => {
    server = await ScriptedServer.start((_req, i) =>
      i === 0 ? { status: 502, body: 'bad gateway' } : { status: 200, body: jobIn('succeeded') },
    );
    expect((await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', FAST)).status).toBe('succeeded');

    // No server at all: the wait goes on (and here ends at its deadline) instead of failing at once.
    const nowhere = createHcpClient({ baseUrl: `http://127.0.0.1:${await closedPort()}` });
    await expect(waitForJob(nowhere, 'p1', 'j1', { ...FAST, timeoutMs: 200 })).rejects.toBeInstanceOf(HcpTimeoutError);
  });

  it('rejects at once with the HcpApiError of a refusal that waiting cannot change', async () => {
    server = await ScriptedServer.start(() => ({ status: 403, body: envelope('FORBIDDEN', 'viewer cannot') }));
    const err = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', FAST).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HcpApiError);
    expect(err).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect(server.requests).toHaveLength(1);
  });

  it('reads a job the read model does not have yet again, until it appears', async () => {
    server = await ScriptedServer.start((_req, i) =>
      i < 2 ? { status: 404, body: envelope('NOT_FOUND', 'no such job') } : { status: 200, body: jobIn('succeeded') },
    );
    const job = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', FAST);
    expect(job.status).toBe('succeeded');
    expect(server.requests).toHaveLength(3);
  });

  it('rejects with NOT_FOUND once notFoundGraceMs has passed without the job, or when a seen job vanishes', async () => {
    server = await ScriptedServer.start(() => ({ status: 404, body: envelope('NOT_FOUND', 'no such job') }));
    const never = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', {
      ...FAST,
      notFoundGraceMs: 100,
    }).catch((e: unknown) => e);
    expect(never).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    await server.close();

    server = await ScriptedServer.start((_req, i) =>
      i === 0 ? { status: 200, body: jobIn('queued') } : { status: 404, body: envelope('NOT_FOUND', 'gone') },
    );
    const vanished = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', FAST).catch(
      (e: unknown) => e,
    );
    expect(vanished).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(server.requests).toHaveLength(2);
  });

  it('rejects with TIMEOUT and the last state seen when the job is still unfinished at timeoutMs', async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: jobIn('running', 1) }));
    const err = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', {
      ...FAST,
      timeoutMs: 150,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HcpTimeoutError);
    expect(err).toBeInstanceOf(HcpApiError);
    expect(err).toMatchObject({ code: 'TIMEOUT', status: 0, job: { status: 'running' } });
    expect(server.requests.length).toBeGreaterThan(1);
  });

  it('rejects with TIMEOUT when the server never answers a read', async () => {
    server = await ScriptedServer.start(() => 'hang');
    await expect(
      waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', { ...FAST, timeoutMs: 150 }),
    ).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('does not wait a Retry-After beyond its deadline', async () => {
    server = await ScriptedServer.start(() => ({
      status: 503,
      headers: { 'retry-after': '3600' },
      body: envelope('PROVIDER_UNAVAILABLE', 'later'),
    }));
    await expect(
      waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', { ...FAST, timeoutMs: 200 }),
    ).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it("stops when the caller's signal aborts, with the signal's reason, and reads no more", async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: jobIn('queued') }));
    const abort = new AbortController();
    const reason = new Error('gateway request cancelled');
    const pending = waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', {
      ...FAST,
      signal: abort.signal,
      onProgress: () => setTimeout(() => abort.abort(reason), 30),
    }).catch((e: unknown) => e);
    expect(await pending).toBe(reason);
    const reads = server.requests.length;
    // A read already on the wire when the signal aborted may still reach the server after the wait has
    // rejected (it did, on a loaded machine); none may start after. Polling on, the wait would read about
    // every 20 ms.
    await new Promise((r) => setTimeout(r, 200));
    expect(server.requests.length).toBeLessThanOrEqual(reads + 1);
  });

  it('rejects at once for a signal aborted before it starts', async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: jobIn('queued') }));
    const err = await waitForJob(createHcpClient({ baseUrl: server.baseUrl }), 'p1', 'j1', {
      signal: AbortSignal.abort(new Error('already gone')),
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('already gone');
    expect(server.requests).toHaveLength(0);
  });
});
