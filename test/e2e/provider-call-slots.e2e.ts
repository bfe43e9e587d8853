import { ApiClient, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/** The process's `hcp_provider_call_slots` series, as `/metrics` serves them: per provider type and state. */
async function slotGauges(baseUrl: string): Promise<Array<{ provider: string; state: string; value: number }>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return [...text.matchAll(/^hcp_provider_call_slots\{([^}]*)\} (\S+)$/gm)].map(([, labels, value]) => ({
    provider: /provider="([^"]*)"/.exec(labels!)![1]!,
    state: /state="([^"]*)"/.exec(labels!)![1]!,
    value: Number(value),
  }));
}

/**
 * A worker runs many jobs at once, but a provider cluster gets at most HCP_PROVIDER_CALLS_PER_CLUSTER
 * changes at once from one process; the other jobs wait their turn and still finish.
 */
describe('provider call slots', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      // A create takes the simulator about 1.2 s: long enough for the others to be seen waiting.
      env: { HCP_SIMULATOR_LATENCY_SCALE: '0.5', HCP_WORKER_CONCURRENCY: '8', HCP_PROVIDER_CALLS_PER_CLUSTER: '1' },
    });
    api = new ApiClient(hcp.baseUrl, hcp.token('alice', { slots: 'admin' }));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('creates one VM at a time on the cluster while the other jobs wait, and finishes them all', async () => {
    const choice = await seededChoice(api);
    const accepted = await Promise.all(
      ['s-1', 's-2', 's-3', 's-4'].map((name) =>
        api.post('/v1/projects/slots/vms', { name, zone: 'local', ...choice }),
      ),
    );
    expect(accepted.map((r) => r.status)).toEqual([202, 202, 202, 202]);

    let finished = false;
    const done = Promise.all(accepted.map((r) => jobFinished(api, 'slots', r.body.job_id))).finally(() => {
      finished = true;
    });
    // Every sample while the jobs run: the provider (the simulator's own table) never builds two VMs at
    // once, and the process's gauges say one create running and, at some point, jobs waiting.
    const seen = { mostBuilding: 0, mostRunning: 0, mostWaiting: 0 };
    while (!finished) {
      const [building] = await queryDatabase<{ n: number }>(
        db.url,
        `SELECT count(*)::int AS n FROM simulator.vms WHERE phase <> 'ready'`,
      );
      seen.mostBuilding = Math.max(seen.mostBuilding, building!.n);
      for (const g of await slotGauges(hcp.baseUrl)) {
        if (g.state === 'running') seen.mostRunning = Math.max(seen.mostRunning, g.value);
        if (g.state === 'waiting') seen.mostWaiting = Math.max(seen.mostWaiting, g.value);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    expect((await done).map((job) => job.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(seen).toEqual({ mostBuilding: 1, mostRunning: 1, mostWaiting: expect.any(Number) });
    expect(seen.mostWaiting).toBeGreaterThanOrEqual(1);
    // Every slot came back; the gauge names the provider's type, never an id.
    expect((await slotGauges(hcp.baseUrl)).map((g) => [g.provider, g.state, g.value])).toEqual([
      ['simulator', 'running', 0],
      ['simulator', 'waiting', 0],
    ]);
  });
});
