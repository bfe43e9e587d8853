import { Client } from 'pg';
import { BenchContext, createBody, PROJECTS, SEEDED, Sizes } from '../lib/context';
import type { HcpUnderTest } from '../lib/hcp';
import { waitForJobsDrained } from '../lib/jobs';
import { runLoad, LoadResult, LoadSpec } from '../lib/load';
import { noPeers, PEERS, PeerName, PeerValues, seedPeerProject } from '../lib/peers';
import { RssSampler } from '../lib/proc';
import { cpuPerOk, msPerOk } from '../lib/rss-tree';
import type { ScenarioResult } from '../lib/report';
import { seedQuotaStream } from '../lib/seed';
import { log, round, waitFor } from '../lib/util';

const WARM_UP_PROJECT = 'bench-warmup';

/**
 * Write path: POST /v1/projects/{p}/vms at 100 concurrent clients, one HCP process with every role
 * (its worker runs the jobs these requests start, with the zero-latency simulator, while the load
 * runs). All requests go to one new project, as the DESIGN.md number states it. With the full sizes two
 * more runs: the same load spread over 100 projects (to tell per-project costs from the rest), and into
 * a project whose quota stream already holds 2,000 reservations (a project with 2,000 VMs).
 */
export async function writePath(ctx: BenchContext): Promise<ScenarioResult> {
  const { sizes } = ctx;
  const db = await ctx.database();
  const { hcp, stop } = await ctx.hcp('write', { databaseUrl: db.url });
  const client = new Client({ connectionString: db.url });
  await client.connect();
  const details: Record<string, unknown> = {};
  try {
    const headers = { authorization: `Bearer ${hcp.token({ bench: 'admin' })}` };
    const spec: LoadSpec = {
      url: hcp.baseUrl,
      method: 'POST',
      path: '/v1/projects/bench/vms',
      body: createBody(),
      headers,
      connections: 100,
      durationS: sizes.writeS,
    };
    await runLoad(warmUp(spec, sizes, { authorization: `Bearer ${hcp.token({ [WARM_UP_PROJECT]: 'admin' })}` }));
    await waitForJobsDrained(client, 1, sizes.drainTimeoutS);
    hcp.rss.beginWindow();
    log(`write: HCP, 100 clients, one project, ${sizes.writeS} s`);
    const one = await ctx.measure(hcp, 'write-one-project', () => runLoad(spec));
    details.hcpOneProject = {
      ...one,
      peakRssMb: round(hcp.rss.peakMb()),
      cpuMsPerOk: cpuPerOk(hcp.rss.cpuMsByProcess(), one.ok),
    };
    let spread: LoadResult | null = null;
    if (sizes.writeSpread) {
      const drained = await waitForJobsDrained(client, 1, sizes.drainTimeoutS);
      details.drainAfterOneProject = drained;
      log(`write: HCP, 100 clients over 100 projects, ${sizes.writeS} s`);
      const spreadHeaders = {
        authorization: `Bearer ${hcp.token(Object.fromEntries(PROJECTS.map((p) => [p, 'admin'])))}`,
      };
      hcp.rss.beginWindow();
      spread = await ctx.measure(hcp, 'write-100-projects', () =>
        runLoad({ ...spec, headers: spreadHeaders, path: '/v1/projects/{project}/vms', projects: PROJECTS }),
      );
      details.hcpSpread = { ...spread, peakRssMb: round(hcp.rss.peakMb()) };
    }
    let existing: LoadResult | null = null;
    if (sizes.writeExistingVms > 0) {
      await waitForJobsDrained(client, 1, sizes.drainTimeoutS);
      await seedQuotaStream(client, 'bench-big', sizes.writeExistingVms);
      // let the quota projections fold the seeded history before measuring
      await waitFor(
        'quota projections to catch up',
        async () => {
          const { rows } = await client.query(
            `SELECT count(*)::int AS behind FROM projection_checkpoints WHERE name LIKE 'quota%' AND position < (SELECT max(position) FROM hcp_events WHERE starts_with(stream_id, 'quota-'))`,
          );
          return rows[0].behind === 0;
        },
        120_000,
        250,
      ).catch((err: Error) => log(err.message));
      log(
        `write: HCP, 100 clients, one project holding ${sizes.writeExistingVms.toLocaleString('en-US')} VMs, ${sizes.writeS} s`,
      );
      const bigHeaders = { authorization: `Bearer ${hcp.token({ 'bench-big': 'admin' })}` };
      hcp.rss.beginWindow();
      existing = await ctx.measure(hcp, 'write-big-project', () =>
        runLoad({ ...spec, headers: bigHeaders, path: '/v1/projects/bench-big/vms' }),
      );
      details.hcpBigProject = { ...existing, peakRssMb: round(hcp.rss.peakMb()) };
    }
    let scaleOut: { okPerS: number; p99: number | null } | null = null;
    if (sizes.writeScaleOut) {
      await waitForJobsDrained(client, 1, sizes.drainTimeoutS);
      scaleOut = await twoApiProcesses(ctx, db.url, hcp, spec, details);
    }
    // The one-project window's peak, as for every other process and row (the high-water mark of the
    // whole process life, kept in details, also covers the diagnostic runs and the warm-up).
    const peakRss = (details.hcpOneProject as { peakRssMb: number | null }).peakRssMb;
    details.hcpRssHwmMb = round(hcp.rss.hwmMb());
    await stop();

    const baseline = await ctx.baseline(db.url);
    const baselineRss = new RssSampler(baseline.process.pid).start();
    await runLoad(warmUp({ ...spec, url: baseline.url }, sizes));
    baselineRss.beginWindow();
    log(`write: baseline, 100 clients, ${sizes.writeS} s`);
    const base = await runLoad({ ...spec, url: baseline.url });
    details.baseline = {
      ...base,
      peakRssMb: round(baselineRss.peakMb()),
      cpuMsPerOk: msPerOk(baselineRss.cpuMs(), base.ok),
    };
    const baselinePeak = baselineRss.peakMb();
    baselineRss.stop();
    await baseline.stop();

    // The peers: each on a database of its own, the same loads in the same order.
    const peers: Partial<Record<PeerName, PeerWrite>> = {};
    for (const name of PEERS) peers[name] = await writePeer(ctx, name, spec, details);
    const of = (pick: (w: PeerWrite) => number | null | undefined): PeerValues => {
      const values = noPeers();
      for (const name of PEERS) values[name] = round(pick(peers[name]!));
      return values;
    };

    const scenario = 'write: POST /vms, 100 clients';
    const rows: ScenarioResult['rows'] = [
      {
        scenario,
        metric: '202s per second',
        unit: '1/s',
        hcp: round(one.okPerS),
        baseline: round(base.okPerS),
        peers: of((w) => w.one.okPerS),
      },
      {
        scenario,
        metric: 'p50',
        unit: 'ms',
        hcp: round(one.latencyMs?.p50),
        baseline: round(base.latencyMs?.p50),
        peers: of((w) => w.one.latencyMs?.p50),
      },
      {
        scenario,
        metric: 'p99',
        unit: 'ms',
        hcp: round(one.latencyMs?.p99),
        baseline: round(base.latencyMs?.p99),
        peers: of((w) => w.one.latencyMs?.p99),
        target: { op: '<', value: 25 },
      },
      {
        scenario,
        metric: 'peak RSS',
        unit: 'MB',
        hcp: round(peakRss),
        baseline: round(baselinePeak),
        peers: of((w) => w.onePeakRssMb),
      },
    ];
    const non202 = one.requests - one.ok;
    if (non202 > 0) rows[0]!.note = `${non202} non-2xx: ${JSON.stringify(one.statusCounts)}`;
    if (spread) {
      const s = 'write: POST /vms, 100 clients, 100 projects';
      rows.push(
        {
          scenario: s,
          metric: '202s per second',
          unit: '1/s',
          hcp: round(spread.okPerS),
          baseline: round(base.okPerS),
          peers: of((w) => w.spread?.okPerS),
        },
        {
          scenario: s,
          metric: 'p50',
          unit: 'ms',
          hcp: round(spread.latencyMs?.p50),
          baseline: round(base.latencyMs?.p50),
          peers: of((w) => w.spread?.latencyMs?.p50),
        },
        {
          scenario: s,
          metric: 'p99',
          unit: 'ms',
          hcp: round(spread.latencyMs?.p99),
          baseline: round(base.latencyMs?.p99),
          peers: of((w) => w.spread?.latencyMs?.p99),
          target: { op: '<', value: 25 },
        },
      );
    }
    if (existing) {
      const s = `write: POST /vms, 100 clients, project holding ${sizes.writeExistingVms.toLocaleString('en-US')} VMs`;
      rows.push(
        {
          scenario: s,
          metric: '202s per second',
          unit: '1/s',
          hcp: round(existing.okPerS),
          baseline: round(base.okPerS),
          peers: of((w) => w.existing?.okPerS),
        },
        {
          scenario: s,
          metric: 'p50',
          unit: 'ms',
          hcp: round(existing.latencyMs?.p50),
          baseline: round(base.latencyMs?.p50),
          peers: of((w) => w.existing?.latencyMs?.p50),
        },
        {
          scenario: s,
          metric: 'p99',
          unit: 'ms',
          hcp: round(existing.latencyMs?.p99),
          baseline: round(base.latencyMs?.p99),
          peers: of((w) => w.existing?.latencyMs?.p99),
          target: { op: '<', value: 25 },
        },
      );
      const bad = existing.requests - existing.ok;
      if (bad) rows[rows.length - 3]!.note = `${bad} non-2xx: ${JSON.stringify(existing.statusCounts)}`;
    }
    if (scaleOut) {
      const s = 'write: POST /vms, 100 clients, two API processes on one database (scale-out diagnostic)';
      rows.push(
        {
          scenario: s,
          metric: '202s per second',
          unit: '1/s',
          hcp: round(scaleOut.okPerS),
          baseline: round(base.okPerS),
          peers: noPeers(),
          note: `${round(scaleOut.okPerS / one.okPerS, 2)}x one process (its one-project row)`,
        },
        {
          scenario: s,
          metric: 'p99 (worse of the two)',
          unit: 'ms',
          hcp: round(scaleOut.p99),
          baseline: null,
          peers: noPeers(),
        },
      );
    }
    return { name: 'write', rows, details };
  } finally {
    await client.end();
    await stop();
  }
}

interface PeerWrite {
  one: LoadResult;
  onePeakRssMb: number | null;
  spread: LoadResult | null;
  existing: LoadResult | null;
}

/**
 * Every side's warm-up before the one-project row: the row's load for `writeWarmupS`, into a project of
 * its own. The measured project is then a new one, as the row says, and the peers' quota streams start
 * empty there, as HCP's does (a warm-up into it grew Emmett's stream, whose cost grows with it). HCP
 * then runs the warm-up's jobs to the end, as each peer goes idle.
 */
function warmUp(spec: LoadSpec, sizes: Sizes, headers: LoadSpec['headers'] = spec.headers): LoadSpec {
  return {
    ...spec,
    path: `/v1/projects/${WARM_UP_PROJECT}/vms`,
    headers,
    durationS: sizes.writeWarmupS,
  };
}

/** The write loads HCP got, against one peer on a fresh database: warm-up, one project, and the diagnostics the sizes ask for. */
async function writePeer(
  ctx: BenchContext,
  name: PeerName,
  spec: LoadSpec,
  details: Record<string, unknown>,
): Promise<PeerWrite> {
  const { sizes } = ctx;
  const db = await ctx.database();
  const peer = await ctx.peer(name, db.url);
  try {
    const peerSpec = { ...spec, url: peer.url };
    await runLoad(warmUp(peerSpec, sizes));
    await peer.idle();
    peer.rss.beginWindow();
    log(`write: ${name}, 100 clients, one project, ${sizes.writeS} s`);
    const one = await runLoad(peerSpec);
    const onePeakRssMb = round(peer.rss.peakMb());
    const oneCpuMs = peer.rss.cpuMs();
    await peer.idle();
    const statsAfterOne = await peer.stats();
    let spread: LoadResult | null = null;
    if (sizes.writeSpread) {
      log(`write: ${name}, 100 clients over 100 projects, ${sizes.writeS} s`);
      spread = await runLoad({ ...peerSpec, path: '/v1/projects/{project}/vms', projects: PROJECTS });
      await peer.idle();
    }
    let existing: LoadResult | null = null;
    if (sizes.writeExistingVms > 0) {
      await seedPeerProject(db.url, 'bench-big', sizes.writeExistingVms, SEEDED);
      log(`write: ${name}, 100 clients, one project holding ${sizes.writeExistingVms} VMs, ${sizes.writeS} s`);
      existing = await runLoad({ ...peerSpec, path: '/v1/projects/bench-big/vms' });
    }
    details[name] = {
      oneProject: {
        ...one,
        peakRssMb: onePeakRssMb,
        cpuMsPerOk: msPerOk(oneCpuMs, one.ok),
        counters: statsAfterOne,
      },
      ...(spread ? { spread } : {}),
      ...(existing ? { bigProject: existing } : {}),
      counters: await peer.stats(),
      rssHwmMb: round(peer.rss.hwmMb()),
    };
    return { one, onePeakRssMb, spread, existing };
  } finally {
    await peer.stop();
  }
}

/**
 * Scale-out diagnostic: a further API process (HCP_ROLES=api) on the same database beside the running
 * HCP (the launcher: an API process per core and the worker+projections one), each side driven by 50 of
 * the 100 clients, into one new project; the sum of their 202s per second against the one-project figure
 * says how far adding API processes on the same database helps. The launcher sized its pools to the
 * server's connection limit less 10; the extra process gets pools of 4 to fit in those 10.
 */
async function twoApiProcesses(
  ctx: BenchContext,
  databaseUrl: string,
  first: HcpUnderTest,
  spec: LoadSpec,
  details: Record<string, unknown>,
): Promise<{ okPerS: number; p99: number | null }> {
  const { sizes } = ctx;
  const { hcp: second, stop } = await ctx.hcp('write-second-api', {
    databaseUrl,
    env: { HCP_ROLES: 'api', HCP_DB_POOL_SIZE: '4' },
  });
  try {
    const loadOn = (hcp: HcpUnderTest): LoadSpec => ({
      ...spec,
      url: hcp.baseUrl,
      path: '/v1/projects/bench-scale/vms',
      headers: { authorization: `Bearer ${hcp.token({ 'bench-scale': 'admin' })}` },
      connections: 50,
    });
    await Promise.all([first, second].map((h) => runLoad({ ...loadOn(h), connections: 5, durationS: sizes.warmupS })));
    log(`write: two API processes, 50 clients each, one project, ${sizes.writeS} s`);
    const [a, b] = await Promise.all([runLoad(loadOn(first)), runLoad(loadOn(second))]);
    details.hcpScaleOut = { first: a, second: b };
    const p99s = [a!.latencyMs?.p99, b!.latencyMs?.p99].filter((v): v is number => typeof v === 'number');
    return { okPerS: a!.okPerS + b!.okPerS, p99: p99s.length ? Math.max(...p99s) : null };
  } finally {
    await stop();
  }
}
