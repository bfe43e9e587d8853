import { Client } from 'pg';
import { BenchContext, createBody } from '../lib/context';
import { jobTimings, waitForJobsDrained } from '../lib/jobs';
import { CheckpointPoller, dbNowMs } from '../lib/lag';
import { runLoad } from '../lib/load';
import { cpuPerOk } from '../lib/rss-tree';
import type { Row, ScenarioResult } from '../lib/report';
import { distribution, log, round, sleep, waitFor } from '../lib/util';

/**
 * Control-plane overhead per job with the zero-latency simulator: from the 202 (the job's JobQueued
 * event, the last write before the answer) to JobSucceeded recorded, and to the job showing
 * `succeeded` in the job read model (what GET /jobs/{id} returns). Two loads: jobs one at a time
 * (5 a second, one client: the floor), and N creates at once (N clients, one request each; 1,000 in
 * full mode), which is the DESIGN.md figure. Baseline: a bare queue (INSERT, NOTIFY, a worker that
 * leases with SKIP LOCKED and completes at once) under the same loads.
 *
 * The jobs one at a time run first, after 50 creates, as they always have: a floor is measured on a
 * quiet system, and right after a burst the database and the projections still work through it (its
 * p50 rose by a third there). The burst that counts runs on a warm HCP, as the write row does: after
 * a warm-up of 10 clients for `warmupS` (the write row's until the twenty-sixth session). The same
 * burst before that warm-up, on a process that has served only those 100 jobs (the burst as measured
 * until the nineteenth session), is a row of its own: V8 has not compiled the hot paths yet, and it
 * costs HCP's processes about half as much CPU again (bench/README.md, the nineteenth session).
 */
export async function jobOverhead(ctx: BenchContext): Promise<ScenarioResult> {
  const { sizes } = ctx;
  const db = await ctx.database();
  const { hcp, stop } = await ctx.hcp('jobs', { databaseUrl: db.url });
  const client = new Client({ connectionString: db.url });
  await client.connect();
  const poller = new CheckpointPoller(db.url, ['job-read-model']);
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  try {
    const headers = { authorization: `Bearer ${hcp.token({ bench: 'admin' })}` };
    const spec = {
      url: hcp.baseUrl,
      method: 'POST' as const,
      path: '/v1/projects/bench/vms',
      body: createBody(),
      headers,
    };
    await runLoad({ ...spec, connections: 5, amount: 50 });
    await waitForJobsDrained(client, 50, sizes.drainTimeoutS);
    await poller.start();

    const measure = async (label: string, load: { connections: number; amount: number; overallRate?: number }) => {
      hcp.rss.beginWindow();
      const before = (await waitForJobsDrained(client, 0, 1)).queued;
      const t0 = await dbNowMs(client);
      const { result, drained } = await ctx.measure(hcp, `jobs-${label}`, async () => {
        const loaded = await runLoad({ ...spec, ...load, timeoutS: 120 });
        return { result: loaded, drained: await waitForJobsDrained(client, before + loaded.ok, sizes.drainTimeoutS) };
      });
      const t1 = (await dbNowMs(client)) + 1;
      await sleep(200);
      const timings = await jobTimings(client, t0, t1);
      // biome-ignore lint/complexity/useMathMinMax: positions are bigints, which Math.max does not take
      const lastPosition = timings.reduce((m, t) => (t.succeededPosition > m ? t.succeededPosition : m), -1n);
      await waitFor('job read model', async () => poller.latest('job-read-model') >= lastPosition, 30_000).catch(
        (err: Error) => log(err.message),
      );
      const recorded = distribution(timings.map((t) => t.succeededMs - t.queuedMs));
      const visible = poller.lags(
        'job-read-model',
        timings.map((t) => ({ position: t.succeededPosition, recordedAtMs: t.queuedMs })),
      );
      const waiting = distribution(timings.filter((t) => t.startedMs !== null).map((t) => t.startedMs! - t.queuedMs));
      const running = distribution(
        timings.filter((t) => t.startedMs !== null).map((t) => t.succeededMs - t.startedMs!),
      );
      const spanS = timings.length
        ? (Math.max(...timings.map((t) => t.succeededMs)) - Math.min(...timings.map((t) => t.queuedMs))) / 1000
        : null;
      details[label] = {
        load: result,
        drained,
        jobs: timings.length,
        recorded,
        visible: visible.lag,
        queuedToStarted: waiting,
        startedToSucceeded: running,
        spanS,
        peakRssMb: round(hcp.rss.peakMb()),
        rssByProcessMb: hcp.rss.peaksByProcess(),
        rssSumMb: round(hcp.rss.sumPeakMb()),
        // Creating the VMs (API) and running their jobs (worker+projections), per job of the window.
        cpuMsPerJob: cpuPerOk(hcp.rss.cpuMsByProcess(), timings.length),
      };
      return { recorded, visible: visible.lag, spanS, jobs: timings.length, result };
    };

    log(`jobs: HCP, ${sizes.jobsIsolated} jobs one at a time`);
    const single = await measure('hcpOneAtATime', { connections: 1, amount: sizes.jobsIsolated, overallRate: 5 });
    log(`jobs: HCP, ${sizes.jobsBurst} creates at once, just started`);
    const justStarted = await measure('hcpBurstJustStarted', { connections: sizes.jobsBurst, amount: sizes.jobsBurst });
    await runLoad({ ...spec, connections: 10, durationS: sizes.warmupS });
    await waitForJobsDrained(client, 0, sizes.drainTimeoutS);
    log(`jobs: HCP, ${sizes.jobsBurst} creates at once`);
    const burst = await measure('hcpBurst', { connections: sizes.jobsBurst, amount: sizes.jobsBurst });
    // The burst window's peak (the process high-water mark would also cover start-up and the first load).
    const peakRss = (details.hcpBurst as { peakRssMb: number | null }).peakRssMb;
    details.hcpRssHwmMb = round(hcp.rss.hwmMb());
    await stop();

    const baseline = await ctx.baseline(db.url);
    const baseSpec = { ...spec, url: baseline.url, path: '/v1/projects/bench/jobs' };
    const baseMeasure = async (load: { connections: number; amount: number; overallRate?: number }) => {
      await client.query(`TRUNCATE bench_baseline_jobs`);
      await runLoad({ ...baseSpec, ...load, timeoutS: 120 });
      await waitFor(
        'baseline jobs',
        async () =>
          Number(
            (
              await client.query(
                `SELECT count(*) FILTER (WHERE status <> 'succeeded')::text AS n FROM bench_baseline_jobs`,
              )
            ).rows[0].n,
          ) === 0,
        60_000,
      );
      const { rows: done } = await client.query<{ ms: string }>(
        `SELECT (extract(epoch FROM finished_at - created_at) * 1000)::text AS ms FROM bench_baseline_jobs`,
      );
      return distribution(done.map((r) => Number(r.ms)));
    };
    await runLoad({ ...baseSpec, connections: 5, amount: 50 });
    log('jobs: baseline queue, one at a time and at once');
    const baseSingle = await baseMeasure({ connections: 1, amount: sizes.jobsIsolated, overallRate: 5 });
    const baseBurst = await baseMeasure({ connections: sizes.jobsBurst, amount: sizes.jobsBurst });
    details.baseline = { oneAtATime: baseSingle, burst: baseBurst };
    await baseline.stop();

    const s1 = `jobs: 202 -> succeeded, one at a time (${sizes.jobsIsolated})`;
    const s2 = `jobs: 202 -> succeeded, ${sizes.jobsBurst.toLocaleString('en-US')} at once`;
    rows.push(
      {
        scenario: s1,
        metric: 'recorded p50',
        unit: 'ms',
        hcp: round(single.recorded.p50),
        baseline: round(baseSingle.p50),
      },
      {
        scenario: s1,
        metric: 'recorded p99',
        unit: 'ms',
        hcp: round(single.recorded.p99),
        baseline: round(baseSingle.p99),
      },
      {
        scenario: s1,
        metric: 'visible (GET /jobs) p50',
        unit: 'ms',
        hcp: round(single.visible.p50),
        baseline: round(baseSingle.p50),
        target: { op: '<', value: 50 },
      },
      {
        scenario: s2,
        metric: 'recorded p50',
        unit: 'ms',
        hcp: round(burst.recorded.p50),
        baseline: round(baseBurst.p50),
      },
      {
        scenario: s2,
        metric: 'recorded p99',
        unit: 'ms',
        hcp: round(burst.recorded.p99),
        baseline: round(baseBurst.p99),
      },
      {
        scenario: s2,
        metric: 'visible (GET /jobs) p50',
        unit: 'ms',
        hcp: round(burst.visible.p50),
        baseline: round(baseBurst.p50),
        target: { op: '<', value: 50 },
      },
      {
        scenario: s2,
        metric: 'visible (GET /jobs) p99',
        unit: 'ms',
        hcp: round(burst.visible.p99),
        baseline: round(baseBurst.p99),
      },
      {
        scenario: s2,
        metric: 'jobs per second (first 202 -> last done)',
        unit: '1/s',
        hcp: burst.spanS ? round(burst.jobs / burst.spanS) : null,
        baseline: null,
      },
      { scenario: s2, metric: 'peak RSS', unit: 'MB', hcp: round(peakRss), baseline: null },
      {
        scenario: `${s2}, just started`,
        metric: 'jobs per second (first 202 -> last done)',
        unit: '1/s',
        hcp: justStarted.spanS ? round(justStarted.jobs / justStarted.spanS) : null,
        baseline: null,
        note: 'the burst as before: after 50 creates and the jobs one at a time; the warm burst above follows a warm-up',
      },
    );
    if (burst.result.ok < sizes.jobsBurst)
      rows[3]!.note = `${sizes.jobsBurst - burst.result.ok} creates not accepted: ${JSON.stringify(burst.result.statusCounts)}`;
    return { name: 'jobs', rows, details };
  } finally {
    await poller.stop().catch(() => undefined);
    await client.end();
    await stop();
  }
}
