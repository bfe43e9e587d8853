import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { createBody } from '../lib/context';
import { createBenchDatabase } from '../lib/db';
import { buildHcp, HcpUnderTest } from '../lib/hcp';
import { runLoad } from '../lib/load';
import { RESULTS_DIR, ROOT } from '../lib/proc';
import { cpuPerOk } from '../lib/rss-tree';
import { distribution, fileStamp, log, round } from '../lib/util';

/*
 * The CPU a create costs at a fixed rate (issue #21):
 * `node scripts/ts-run.js bench/cost/write-cost.ts --side=base: --side=trial:--some-v8-flag`
 * (or `--side=semi16:HCP_API_SEMI_SPACE_MB=16`).
 *
 * HCP (the compiled build as `npm start` runs it: launcher, API process, worker+projections) gets creates
 * into one project at a fixed rate (an open loop: the same arrivals for every side), and the CPU of its
 * processes and of PostgreSQL in the window is divided by the creates answered. Sides (comma-separated
 * after the colon: node/V8 flags for all of HCP's processes, `--...`, and HCP variables, `NAME=value`)
 * alternate round by round on fresh databases, so a slow spell of the machine falls on both.
 *
 * Read the figure with the rate: HCP's loops (group commits, leases, projection batches) take what has
 * arrived, so batches grow with the rate and the CPU per create falls. Measured on the two-core machine
 * (bench/README.md, the twenty-first session): 48 ms per create at 5/s (mostly per-batch costs), 7.2 ms
 * at 250/s (1.8 cores busy), 4.09 ms at 450/s, where three rounds gave 4.090, 4.089 and 4.089 ms: both
 * cores full, so the figure was the machine's CPU divided by the rate and no longer a cost. Compare sides
 * at a rate that leaves the machine idle part of the time; `--rate=0` is a closed loop instead (100 clients,
 * each sending its next create when the last is answered), where the sides' creates/s differ.
 *
 * Options: --side=<name>:<flags and variables> (repeatable; default one side without either), --rate=250 (creates/s),
 * --seconds=20, --warmup=10 (s at the same rate, on the same process, before the window), --rounds=3,
 * --no-build (reuse bench/.build), --label=<name>. Writes bench/results/cost-<timestamp>-<label>.json.
 */

interface Side {
  name: string;
  flags: string[];
  env: Record<string, string>;
}

interface Options {
  build: boolean;
  sides: Side[];
  rate: number;
  seconds: number;
  warmup: number;
  rounds: number;
  label: string;
}

interface Window {
  side: string;
  round: number;
  ok: number;
  okPerS: number | null;
  non2xx: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** CPU ms per create: the API process(es), all of HCP's processes, PostgreSQL, and their sum. */
  apiMs: number | null;
  hcpMs: number | null;
  postgresMs: number | null;
  totalMs: number | null;
  byProcess: Record<string, number>;
}

function options(argv: string[]): Options {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const sides = argv
    .filter((a) => a.startsWith('--side='))
    .map((a) => {
      const spec = a.slice('--side='.length);
      const colon = spec.indexOf(':');
      const name = colon < 0 ? spec : spec.slice(0, colon);
      const entries =
        colon < 0
          ? []
          : spec
              .slice(colon + 1)
              .split(',')
              .filter(Boolean);
      const variables = entries.filter((e) => !e.startsWith('-')).map((e) => e.split('='));
      return {
        name,
        flags: entries.filter((e) => e.startsWith('-')),
        env: Object.fromEntries(variables.map(([key, ...value]) => [key!, value.join('=')])),
      };
    });
  return {
    build: !argv.includes('--no-build'),
    sides: sides.length > 0 ? sides : [{ name: 'base', flags: [], env: {} }],
    rate: Number(value('rate') ?? 250),
    seconds: Number(value('seconds') ?? 20),
    warmup: Number(value('warmup') ?? 10),
    rounds: Number(value('rounds') ?? 3),
    label: value('label') ?? 'run',
  };
}

async function measure(side: Side, round_: number, opts: Options): Promise<Window> {
  const db = await createBenchDatabase();
  let hcp: HcpUnderTest | undefined;
  try {
    hcp = await HcpUnderTest.start({ databaseUrl: db.url, runtime: 'build', nodeFlags: side.flags, env: side.env });
    const load = {
      url: hcp.baseUrl,
      method: 'POST' as const,
      path: '/v1/projects/bench/vms',
      body: createBody(),
      headers: { authorization: `Bearer ${hcp.token({ bench: 'admin' })}` },
      connections: 100,
      overallRate: opts.rate,
    };
    await runLoad({ ...load, durationS: opts.warmup });
    hcp.rss.beginWindow();
    const result = await runLoad({ ...load, durationS: opts.seconds });
    const cpu = cpuPerOk(hcp.rss.cpuMsByProcess(), result.ok);
    const total = cpu.all === null || cpu.postgres === null ? null : round(cpu.all + cpu.postgres, 3);
    return {
      side: side.name,
      round: round_,
      ok: result.ok,
      okPerS: round(result.ok / opts.seconds, 1),
      non2xx: result.requests - result.ok,
      p50Ms: round(result.latencyMs?.p50, 1),
      p99Ms: round(result.latencyMs?.p99, 1),
      apiMs: cpu.api,
      hcpMs: cpu.all,
      postgresMs: cpu.postgres,
      totalMs: total,
      byProcess: cpu.byProcess,
    };
  } finally {
    await hcp?.stop();
    await db.drop();
  }
}

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  if (opts.build) await buildHcp();
  const windows: Window[] = [];
  for (let r = 1; r <= opts.rounds; r++) {
    for (const side of opts.sides) {
      const settings = [...side.flags, ...Object.entries(side.env).map(([k, v]) => `${k}=${v}`)];
      const rate = opts.rate > 0 ? `${opts.rate} creates/s` : 'closed loop';
      log(`cost: round ${r}, side ${side.name} (${settings.join(' ') || 'as is'}), ${rate}`);
      const w = await measure(side, r, opts);
      log(
        `  ${w.ok} creates (${w.non2xx} not 2xx), p99 ${w.p99Ms} ms; CPU ms per create: API ${w.apiMs}, HCP ${w.hcpMs}, PostgreSQL ${w.postgresMs}, total ${w.totalMs}`,
      );
      windows.push(w);
    }
  }
  const summary = opts.sides.map((side) => {
    const mine = windows.filter((w) => w.side === side.name);
    const of = (pick: (w: Window) => number | null) => {
      const values = mine.map(pick).filter((v): v is number => v !== null);
      const d = distribution(values);
      return {
        median: round(d.p50, 3),
        min: round(values.length ? Math.min(...values) : null, 3),
        max: round(d.max, 3),
      };
    };
    return {
      side: side.name,
      flags: side.flags,
      env: side.env,
      apiMs: of((w) => w.apiMs),
      hcpMs: of((w) => w.hcpMs),
      postgresMs: of((w) => w.postgresMs),
      totalMs: of((w) => w.totalMs),
      p99Ms: of((w) => w.p99Ms),
      createsPerS: of((w) => w.okPerS),
    };
  });
  console.log('\nCPU ms per create (median of the rounds, min-max):');
  console.log('| side | API | all of HCP | PostgreSQL | total | p99 ms | creates/s |');
  console.log('|---|---|---|---|---|---|---|');
  const cell = (v: { median: number | null; min: number | null; max: number | null }) =>
    `${v.median} (${v.min}-${v.max})`;
  for (const s of summary)
    console.log(
      `| ${s.side} | ${cell(s.apiMs)} | ${cell(s.hcpMs)} | ${cell(s.postgresMs)} | ${cell(s.totalMs)} | ${cell(s.p99Ms)} | ${cell(s.createsPerS)} |`,
    );
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `cost-${fileStamp(new Date())}-${opts.label}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), options: opts, loadAverageAfter: loadavg(), summary, windows }, null, 1)}\n`,
  );
  console.log(`results: ${path.relative(ROOT, file)}`);
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
