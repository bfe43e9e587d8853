import { Client } from 'pg';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { connectConsole, refusedUpgrade } from '../support/console-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/** Small budgets, so a bounded flood goes well past them. */
const RECORDED_PER_MINUTE = 20;
const ANONYMOUS_PER_MINUTE = 1_000;
const CONSOLE_RECORDED_PER_MINUTE = 5;
/** Refused requests in the HTTP flood (loopback only); REFUSAL_FLOOD_COUNT overrides it for a measurement. */
const FLOOD = Number(process.env.REFUSAL_FLOOD_COUNT ?? 2_000);
const CONCURRENCY = 16;
const WINDOW_MS = 60_000;

/**
 * A refused request costs at most a bounded number of stored events, whoever sends them: a flood of bad
 * tokens from one address is recorded up to the budget, counted in summaries beyond it, and answered 429
 * without any write past the higher budget; a flood of wrong console tokens is recorded as the anonymous
 * caller's, up to the budget, and not at all once the session is over.
 */
describe('refusal floods', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let pg: Client;
  let tenant: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0',
        HCP_REFUSALS_RECORDED_PER_MINUTE: String(RECORDED_PER_MINUTE),
        HCP_REFUSALS_ANONYMOUS_PER_MINUTE: String(ANONYMOUS_PER_MINUTE),
        HCP_CONSOLE_REFUSALS_RECORDED_PER_MINUTE: String(CONSOLE_RECORDED_PER_MINUTE),
      },
    });
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    tenant = new ApiClient(hcp.baseUrl, hcp.token('cora', { flood: 'operator' }));
  });

  afterAll(async () => {
    await pg?.end();
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  const eventsOf = async (type: string, streamId?: string) =>
    (
      await pg.query<{ data: Record<string, unknown>; metadata: Record<string, unknown> }>(
        `SELECT data, metadata FROM hcp_events WHERE type = $1 AND ($2::text IS NULL OR stream_id = $2) ORDER BY position`,
        [type, streamId ?? null],
      )
    ).rows;

  /** How many budget windows a flood that took `ms` can have touched (each key's window starts at its first hit). */
  const windowsIn = (ms: number) => 1 + Math.floor(ms / WINDOW_MS);

  async function runningVm(): Promise<string> {
    const admin = new ApiClient(hcp.baseUrl, hcp.token('setup', { flood: 'admin' }));
    const choice = await seededChoice(admin);
    const res = await admin.post('/v1/projects/flood/vms', { name: 'flood', zone: 'local', ...choice, power_on: true });
    expect((await jobFinished(admin, 'flood', res.body.job_id)).status).toBe('succeeded');
    await eventually(
      async () =>
        (await admin.get(`/v1/projects/flood/vms/${res.body.resource_id}`)).body.status === 'running'
          ? true
          : undefined,
      'VM running',
    );
    return res.body.resource_id;
  }

  describe('console tokens', () => {
    let vmId: string;
    beforeAll(async () => {
      vmId = await runningVm();
    });

    it('records no wrong token once the session has closed', async () => {
      const { url, token, session_id } = (await tenant.post(`/v1/projects/flood/vms/${vmId}/console`, { type: 'vnc' }))
        .body;
      const client = await connectConsole(url, token);
      client.ws.close();
      await client.closed;
      await eventually(
        async () => ((await eventsOf('ConsoleSessionClosed', `console-${session_id}`)).length ? true : undefined),
        'session closed',
      );

      for (let i = 0; i < 30; i++) expect((await refusedUpgrade(url, `wrong-${i}`)).status).toBe(401);
      expect((await refusedUpgrade(url, token)).status).toBe(401);
      expect(await eventsOf('ConsoleSessionRefused', `console-${session_id}`)).toEqual([]);
    });

    it('records a bounded number of wrong tokens for a live session, as the anonymous caller with its address', async () => {
      const { url, token, session_id } = (await tenant.post(`/v1/projects/flood/vms/${vmId}/console`, { type: 'vnc' }))
        .body;
      const started = Date.now();
      const statuses = await Promise.all(
        Array.from({ length: 100 }, (_, i) => refusedUpgrade(url, `wrong-${i}`).then((r) => r.status)),
      );
      const tookMs = Date.now() - started;
      expect(new Set(statuses)).toEqual(new Set([401]));

      const refused = await eventsOf('ConsoleSessionRefused', `console-${session_id}`);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.length).toBeLessThanOrEqual(CONSOLE_RECORDED_PER_MINUTE * windowsIn(tookMs));
      for (const e of refused) {
        expect(e.metadata).toMatchObject({ actor: 'anonymous', schema_version: 2 });
        expect(e.data).toMatchObject({ session_id, reason: 'token_invalid', client_address: '127.0.0.1' });
      }
      // The wrong tokens did not spend the right one.
      const client = await connectConsole(url, token);
      client.ws.close();
      await client.closed;
    });
  });

  describe('bad bearer tokens', () => {
    it('stores at most the budget plus summaries for a flood from one address, and answers past the higher budget 429 without writing', async () => {
      const anonymous = new ApiClient(hcp.baseUrl, 'not-a-valid-token');
      const statuses: number[] = [];
      const retryAfter: Array<string | null> = [];
      let sent = 0;
      const started = Date.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (sent < FLOOD) {
            sent += 1;
            const res = await anonymous.get('/v1/projects/flood/vms');
            statuses.push(res.status);
            if (res.status === 429) retryAfter.push(res.headers.get('retry-after'));
          }
        }),
      );
      const windows = windowsIn(Date.now() - started);
      const unauthorized = statuses.filter((s) => s === 401).length;
      const limited = statuses.filter((s) => s === 429).length;
      expect(unauthorized + limited).toBe(FLOOD);
      expect(limited).toBeGreaterThanOrEqual(FLOOD - ANONYMOUS_PER_MINUTE * windows);
      expect(retryAfter.every((r) => r !== null && Number(r) >= 1)).toBe(true);

      // Summaries are written every window and when the process stops: stop it to read them all.
      await hcp.stop();
      const refused = await eventsOf('RequestRefused');
      const summaries = await eventsOf('RequestRefusalsSuppressed');
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.length).toBeLessThanOrEqual(RECORDED_PER_MINUTE * windows);
      expect(summaries.length).toBeGreaterThan(0);
      // One summary per address and window of the writer (and one more at shutdown).
      expect(summaries.length).toBeLessThanOrEqual(windows + 1);
      for (const s of summaries) expect(s.data).toMatchObject({ client_address: '127.0.0.1', actor: null });
      const sum = (field: string) => summaries.reduce((n, s) => n + (s.data[field] as number), 0);
      // Every refusal is accounted for: recorded one by one, or counted in a summary.
      expect(refused.length + sum('suppressed')).toBe(FLOOD);
      expect(sum('rate_limited')).toBe(limited);
      process.stdout.write(
        `refusal flood: ${FLOOD} refused requests stored ${refused.length} RequestRefused and ${summaries.length} RequestRefusalsSuppressed events (${unauthorized} answered 401, ${limited} answered 429)\n`,
      );
    });
  });
});
