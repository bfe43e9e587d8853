import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { connectConsole } from '../support/console-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/**
 * A console relayed by an HCP instance that dies (SIGKILL: no shutdown, no close recorded) is closed by
 * another instance's sweeper once the dead one's hold has run out, and the audit trail says why.
 */
describe('console sessions of an HCP instance that died', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let tenant: ApiClient;
  let auditor: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0', LOG_LEVEL: 'info' } });
    tenant = new ApiClient(hcp.baseUrl, hcp.token('cora', { con: 'operator' }));
    auditor = new ApiClient(hcp.baseUrl, hcp.token('audrey', {}, ['security-auditor']));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  async function runningVm(): Promise<string> {
    const admin = new ApiClient(hcp.baseUrl, hcp.token('setup', { con: 'admin' }));
    const res = await admin.post('/v1/projects/con/vms', {
      name: 'console-sweep',
      zone: 'local',
      ...(await seededChoice(admin)),
    });
    expect((await jobFinished(admin, 'con', res.body.job_id)).status).toBe('succeeded');
    await eventually(
      async () =>
        (await admin.get(`/v1/projects/con/vms/${res.body.resource_id}`)).body.status === 'running' ? true : undefined,
      'VM running',
    );
    return res.body.resource_id;
  }

  const holds = () =>
    queryDatabase<{ session_id: string; holder: string }>(
      db.url,
      'SELECT session_id, holder FROM console_session_holds',
    );

  it('closes the session as instance_lost from another instance, once the dead instance’s hold ran out', async () => {
    const vmId = await runningVm();
    const relaying = await HcpProcess.start({
      databaseUrl: db.url,
      env: { HCP_SIMULATOR_LATENCY_SCALE: '0', HCP_SEED_CATALOG: 'false' },
    });
    try {
      const { url, token, session_id } = (await tenant.post(`/v1/projects/con/vms/${vmId}/console`, { type: 'vnc' }))
        .body;
      const client = await connectConsole(
        url.replace(hcp.baseUrl.replace('http', 'ws'), relaying.baseUrl.replace('http', 'ws')),
        token,
      );
      expect(client.serverInit.width).toBeGreaterThan(0);
      const [held] = await holds();
      expect(held.session_id).toBe(session_id);

      await relaying.kill();
      await client.closed;
      // The minute the dead instance does not renew its hold, without waiting for it.
      await queryDatabase(
        db.url,
        `UPDATE console_session_holds SET expires_at = now() - interval '1 second' WHERE session_id = $1`,
        [session_id],
      );

      const closed = await eventually(
        async () => {
          const items = (await auditor.get(`/v1/ops/audit?target=${session_id}&limit=50`)).body.items as Array<{
            action: string;
            details: Record<string, unknown>;
          }>;
          return items.find((i) => i.action === 'console.close');
        },
        'the session closed by the sweeper',
        60_000,
      );
      expect(closed.details).toMatchObject({ reason: 'instance_lost' });
      expect(await holds()).toEqual([]);
      const metrics = await (await fetch(`${hcp.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/hcp_console_sessions_swept_total\{reason="instance_lost"\} 1/);
    } finally {
      await relaying.stop();
      relaying.removeDataDir();
    }
  });
});
