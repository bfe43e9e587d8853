import { ApiClient, type ApiResponse } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

describe('security boundary', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_RATE_LIMIT_ACTOR_PER_MINUTE: '8',
        HCP_RATE_LIMIT_PROJECT_PER_MINUTE: '12',
        HCP_SIMULATOR_LATENCY_SCALE: '0',
      },
    });
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('sends security headers on answers and errors, and no stack traces', async () => {
    const api = new ApiClient(hcp.baseUrl, hcp.token('hdr', { h: 'viewer' }));
    for (const res of [
      await api.get('/v1/projects/h/vms'),
      await api.get('/v1/projects/h/vms/not-a-uuid'),
      await api.as(undefined).get('/health/live'),
    ]) {
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+|node_modules|QueryFailedError/);
    }
  });

  it('limits requests per actor with 429 RATE_LIMITED and Retry-After', async () => {
    const api = new ApiClient(hcp.baseUrl, hcp.token('busy', { r1: 'viewer' }));
    const statuses: number[] = [];
    let limited: ApiResponse | undefined;
    for (let i = 0; i < 10; i++) {
      const res = await api.get('/v1/projects/r1/vms');
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    expect(statuses.slice(0, 8)).toEqual(Array(8).fill(200));
    expect(statuses.slice(8)).toEqual([429, 429]);
    expect(limited!.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 'actor' } });
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another actor is not affected.
    expect((await api.as(hcp.token('calm', { r1: 'viewer' })).get('/v1/projects/r1/vms')).status).toBe(200);
  });

  it("tells each budget's limit, what is left of it and when its window ends", async () => {
    const api = new ApiClient(hcp.baseUrl, hcp.token('counted', { told: 'viewer' }));
    const budgets = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.get('/v1/projects/told/vms');
      budgets.push(
        ['actor', 'project'].map((b) => [
          res.headers.get(`x-ratelimit-limit-${b}`),
          res.headers.get(`x-ratelimit-remaining-${b}`),
        ]),
      );
      for (const b of ['actor', 'project'])
        expect(Number(res.headers.get(`x-ratelimit-reset-${b}`))).toBeGreaterThan(0);
    }
    expect(budgets).toEqual([
      [
        ['8', '7'],
        ['12', '11'],
      ],
      [
        ['8', '6'],
        ['12', '10'],
      ],
      [
        ['8', '5'],
        ['12', '9'],
      ],
    ]);
    // Only the actor's budget on a route outside any project.
    const outside = await api.get('/v1/images');
    expect(outside.headers.get('x-ratelimit-remaining-actor')).toBe('4');
    expect(outside.headers.get('x-ratelimit-remaining-project')).toBeNull();
  });

  it('limits requests per project across its actors', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) {
      const api = new ApiClient(hcp.baseUrl, hcp.token(`member-${i % 3}`, { crowded: 'viewer' }));
      statuses.push((await api.get('/v1/projects/crowded/vms')).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(12);
    expect(statuses.slice(12)).toEqual([429, 429]);
  });

  it('keeps tenants out of the ops scope and ops out of tenant projects unless they break glass, which is recorded', async () => {
    const opsApi = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator']));
    expect((await opsApi.get('/v1/projects/bg/vms')).status).toBe(403);
    const glass = new ApiClient(hcp.baseUrl, hcp.token('bea', {}, ['break-glass']));
    const refused = await glass.get('/v1/projects/bg/vms');
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/X-Break-Glass-Reason/);
    const allowed = await glass.get('/v1/projects/bg/vms', { 'x-break-glass-reason': 'INC-1234 tenant locked out' });
    expect(allowed.status).toBe(200);
    const created = await glass.post(
      '/v1/projects/bg/vms',
      {
        name: 'rescue',
        zone: 'local',
        ...(await seededChoice(new ApiClient(hcp.baseUrl, hcp.token('t', { bg: 'viewer' })))),
      },
      { 'x-break-glass-reason': 'INC-1234 restore' },
    );
    expect(created.status).toBe(202);
    const uses = await queryDatabase<{
      data: { actor: string; reason: string; method: string; project_id: string };
      metadata: { trace_id: string };
    }>(db.url, `SELECT data, metadata FROM hcp_events WHERE type = 'BreakGlassUsed' ORDER BY position`);
    expect(uses.map((u) => [u.data.actor, u.data.method, u.data.project_id, u.data.reason])).toEqual([
      ['bea', 'GET', 'bg', 'INC-1234 tenant locked out'],
      ['bea', 'POST', 'bg', 'INC-1234 restore'],
    ]);
    expect(uses[1].metadata.trace_id).toBe(created.headers.get('x-request-id'));
  });
});
