import { Client } from 'pg';
import { BenchContext, createBody, PROJECTS, SEEDED } from '../lib/context';
import { waitForJobsDrained } from '../lib/jobs';
import { CheckpointPoller, dbNowMs, eventsSince, syntheticJobFlow } from '../lib/lag';
import { runLoad } from '../lib/load';
import { ManagedProcess, RssSampler } from '../lib/proc';
import type { Row, ScenarioResult } from '../lib/report';
import { log, round, waitFor } from '../lib/util';

const maxPosition = async (client: Client, prefix: string): Promise<bigint> =>
  BigInt(
    (
      await client.query(
        `SELECT coalesce(max(position), -1)::text AS p FROM hcp_events WHERE starts_with(stream_id, $1)`,
        [prefix],
      )
    ).rows[0].p,
  );

/**
 * Projection lag: event appended (its recorded_at) -> the read-model row visible (the projection's
 * checkpoint, written in the row's transaction, covers the event), both on the database clock.
 *
 * 1. isolated: HCP runs api+projections only; the harness appends the event flow of N create jobs a
 *    second straight into hcp_events, from a process of its own (bench/children/synthetic-flow.ts). The baseline projector
 *    (bench/baseline/projector.ts) then takes HCP's place on the same database and gets the same flow.
 * 2. end to end: HCP with every role; autocannon requests N creates a second (fixed rate, 100
 *    projects); the events come from HCP's own command handlers and worker.
 */
export async function projectionLag(ctx: BenchContext): Promise<ScenarioResult> {
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  const rate = ctx.sizes.lagJobsPerS;
  const durationMs = ctx.sizes.lagS * 1000;

  // -- 1. isolated ----------------------------------------------------------------------------------
  {
    const db = await ctx.database();
    const { hcp, stop } = await ctx.hcp('lag-isolated', { databaseUrl: db.url, env: { HCP_ROLES: 'api,projections' } });
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const poller = new CheckpointPoller(db.url, ['vm-read-model', 'job-read-model', 'baseline-vm']);
    await poller.start();
    try {
      hcp.rss.beginWindow();
      log(`lag: synthetic flow of ${rate} jobs/s for ${ctx.sizes.lagS} s into HCP's projections`);
      const t0 = await dbNowMs(client);
      const flow = await ctx.measure(hcp, 'lag-isolated', () =>
        syntheticJobFlow(ctx.script('bench/children/synthetic-flow.ts'), db.url, SEEDED, rate, durationMs),
      );
      const t1 = (await dbNowMs(client)) + 1;
      const lastVm = await maxPosition(client, 'vm-');
      const lastJob = await maxPosition(client, 'job-');
      await waitFor(
        'HCP projections to catch up',
        async () => poller.latest('vm-read-model') >= lastVm && poller.latest('job-read-model') >= lastJob,
        60_000,
      ).catch((err: Error) => log(err.message));
      const vmLag = poller.lags('vm-read-model', await eventsSince(client, 'vm-', t0, t1));
      const jobLag = poller.lags('job-read-model', await eventsSince(client, 'job-', t0, t1));
      const hcpPeak = hcp.rss.peakMb();
      await stop();

      log('lag: the same flow into the baseline projector');
      const projector = ManagedProcess.spawnNode(
        'projector',
        [...ctx.script('bench/baseline/projector.ts'), db.url],
        {},
      );
      const projectorRss = new RssSampler(projector.pid).start();
      try {
        const head = await maxPosition(client, 'vm-');
        await waitFor('the baseline projector to catch up', async () => poller.latest('baseline-vm') >= head, 60_000);
        const b0 = await dbNowMs(client);
        const baseFlow = await syntheticJobFlow(
          ctx.script('bench/children/synthetic-flow.ts'),
          db.url,
          SEEDED,
          rate,
          durationMs,
        );
        const b1 = (await dbNowMs(client)) + 1;
        const baseLast = await maxPosition(client, 'vm-');
        await waitFor(
          'the baseline projector to catch up',
          async () => poller.latest('baseline-vm') >= baseLast,
          60_000,
        ).catch((err: Error) => log(err.message));
        const baseLag = poller.lags('baseline-vm', await eventsSince(client, 'vm-', b0, b1));
        details.isolated = {
          flow,
          baseFlow,
          vmLag,
          jobLag,
          baseLag,
          hcpPeakRssMb: round(hcpPeak),
          pollEveryMs: poller.everyMs,
        };
        const scenario = `lag, isolated: synthetic ${rate} jobs/s`;
        const late =
          flow.jobs < rate * ctx.sizes.lagS * 0.95
            ? `the appender fell behind (${flow.ticksLate} late ticks)`
            : undefined;
        rows.push(
          {
            scenario,
            metric: 'jobs per second appended',
            unit: '1/s',
            hcp: round(flow.jobs / ctx.sizes.lagS),
            baseline: round(baseFlow.jobs / ctx.sizes.lagS),
            ...(late ? { note: late } : {}),
          },
          {
            scenario,
            metric: 'vm-read-model lag p50',
            unit: 'ms',
            hcp: round(vmLag.lag.p50),
            baseline: round(baseLag.lag.p50),
          },
          {
            scenario,
            metric: 'vm-read-model lag p99',
            unit: 'ms',
            hcp: round(vmLag.lag.p99),
            baseline: round(baseLag.lag.p99),
            target: { op: '<', value: 100 },
            ...(vmLag.uncovered ? { note: `${vmLag.uncovered} events never became visible` } : {}),
          },
          {
            scenario,
            metric: 'job-read-model lag p99',
            unit: 'ms',
            hcp: round(jobLag.lag.p99),
            baseline: null,
            target: { op: '<', value: 100 },
          },
          { scenario, metric: 'peak RSS', unit: 'MB', hcp: round(hcpPeak), baseline: round(projectorRss.peakMb()) },
        );
      } finally {
        projectorRss.stop();
        await projector.stop();
      }
    } finally {
      await poller.stop();
      await client.end();
      await stop();
    }
  }

  // -- 2. end to end --------------------------------------------------------------------------------
  {
    const db = await ctx.database();
    const { hcp, stop } = await ctx.hcp('lag-e2e', { databaseUrl: db.url });
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const poller = new CheckpointPoller(db.url, ['vm-read-model', 'job-read-model']);
    try {
      const headers = { authorization: `Bearer ${hcp.token(Object.fromEntries(PROJECTS.map((p) => [p, 'admin'])))}` };
      const spec = {
        url: hcp.baseUrl,
        method: 'POST' as const,
        path: '/v1/projects/{project}/vms',
        body: createBody(),
        headers,
        projects: PROJECTS,
      };
      await runLoad({ ...spec, connections: 10, durationS: ctx.sizes.warmupS });
      await waitForJobsDrained(client, 1, ctx.sizes.drainTimeoutS);
      await poller.start();
      hcp.rss.beginWindow();
      log(`lag: HCP end to end, ${rate} creates/s requested for ${ctx.sizes.lagS} s`);
      const t0 = await dbNowMs(client);
      const load = await ctx.measure(hcp, 'lag-e2e', () =>
        runLoad({ ...spec, connections: 100, overallRate: rate, durationS: ctx.sizes.lagS }),
      );
      const t1 = (await dbNowMs(client)) + 1;
      const drained = await waitForJobsDrained(client, 1, ctx.sizes.drainTimeoutS);
      const t2 = await dbNowMs(client);
      const lastVm = await maxPosition(client, 'vm-');
      await waitFor('projections to catch up', async () => poller.latest('vm-read-model') >= lastVm, 30_000).catch(
        (err: Error) => log(err.message),
      );
      const succeededBetween = async (from: number, to: number) =>
        Number(
          (
            await client.query(
              `SELECT count(*)::text AS n FROM hcp_events WHERE type = 'JobSucceeded' AND recorded_at >= to_timestamp($1 / 1000.0) AND recorded_at < to_timestamp($2 / 1000.0)`,
              [from, to],
            )
          ).rows[0].n,
        );
      const succeeded = await succeededBetween(t0, t1);
      const succeededAll = await succeededBetween(t0, t2 + 1);
      const vmLag = poller.lags('vm-read-model', await eventsSince(client, 'vm-', t0, t1));
      const jobLag = poller.lags('job-read-model', await eventsSince(client, 'job-', t0, t1));
      const hcpPeak = hcp.rss.peakMb();
      details.endToEnd = {
        load,
        drained,
        succeededInWindow: succeeded,
        succeededUntilDrained: succeededAll,
        drainedAfterS: (t2 - t0) / 1000,
        vmLag,
        jobLag,
        peakRssMb: round(hcpPeak),
        rssByProcessMb: hcp.rss.peaksByProcess(),
        rssSumMb: round(hcp.rss.sumPeakMb()),
      };
      const seconds = (t1 - t0) / 1000;
      const scenario = `lag, end to end: ${rate} creates/s requested`;
      rows.push(
        { scenario, metric: '202s per second', unit: '1/s', hcp: round(load.okPerS), baseline: null },
        {
          scenario,
          metric: 'jobs succeeded per second, during the load',
          unit: '1/s',
          hcp: round(succeeded / seconds),
          baseline: null,
          target: { op: '>', value: rate * 0.95 },
        },
        {
          scenario,
          metric: 'jobs succeeded per second, load start to drained',
          unit: '1/s',
          hcp: round(succeededAll / ((t2 - t0) / 1000)),
          baseline: null,
        },
        { scenario, metric: 'vm-read-model lag p50', unit: 'ms', hcp: round(vmLag.lag.p50), baseline: null },
        {
          scenario,
          metric: 'vm-read-model lag p99',
          unit: 'ms',
          hcp: round(vmLag.lag.p99),
          baseline: null,
          target: { op: '<', value: 100 },
        },
        {
          scenario,
          metric: 'job-read-model lag p99',
          unit: 'ms',
          hcp: round(jobLag.lag.p99),
          baseline: null,
          target: { op: '<', value: 100 },
        },
        { scenario, metric: 'peak RSS', unit: 'MB', hcp: round(hcpPeak), baseline: null },
      );
      if (drained.seconds === null)
        rows[1]!.note = `jobs not drained within ${ctx.sizes.drainTimeoutS} s (${drained.finished}/${drained.queued})`;
    } finally {
      await poller.stop().catch(() => undefined);
      await client.end();
      await stop();
    }
  }
  return { name: 'lag', rows, details };
}
