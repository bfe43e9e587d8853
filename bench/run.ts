/**
 * The benchmarks of DESIGN.md ("Numbers to hold"), HCP side by side with a baseline, in one run.
 *
 *   node scripts/ts-run.js bench/run.ts [--quick] [--only=write,read,lag,rebuild,jobs] [--profile] [--runtime=build|ts]
 *                                       [--no-build] [--set=size=value,...]
 *
 * Prints a table on stdout and writes everything measured to bench/results/<timestamp>.json. Progress
 * goes to stderr. See bench/README.md.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg, cpus, totalmem } from 'node:os';
import * as path from 'node:path';
import { BenchContext, FULL, QUICK, Sizes } from './lib/context';
import { ADMIN_URL, withClient } from './lib/db';
import { buildHcp, BUILD_DIR, compileBenchScripts, Runtime } from './lib/hcp';
import { RESULTS_DIR, ROOT } from './lib/proc';
import { relativeTargets, relativeTargetsTable } from './lib/relative-targets';
import { ScenarioResult, table, verdict, ratio } from './lib/report';
import { fileStamp, log } from './lib/util';
import { writePath } from './scenarios/write';
import { readPath } from './scenarios/read';
import { projectionLag } from './scenarios/lag';
import { rebuild } from './scenarios/rebuild';
import { jobOverhead } from './scenarios/jobs';

const SCENARIOS: Record<string, (ctx: BenchContext) => Promise<ScenarioResult>> = {
  write: writePath,
  read: readPath,
  lag: projectionLag,
  rebuild,
  jobs: jobOverhead,
};

function parseArgs(argv: string[]) {
  const flag = (name: string) => argv.includes(`--${name}`);
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const unknown = argv.filter((a) => !/^--(help|quick|profile|no-build|only=.*|runtime=.*|set=.*)$/.test(a));
  if (unknown.length || flag('help')) {
    process.stderr.write(
      `usage: bench/run.ts [--quick] [--only=${Object.keys(SCENARIOS).join(',')}] [--profile] [--runtime=build|ts] [--no-build] [--set=writeS=5,writeSpread=true,...]\n`,
    );
    process.exit(unknown.length ? 2 : 0);
  }
  const only = value('only')?.split(',') ?? Object.keys(SCENARIOS);
  for (const name of only) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}`);
  const runtime = (value('runtime') ?? 'build') as Runtime;
  if (runtime !== 'build' && runtime !== 'ts') throw new Error(`--runtime must be build or ts`);
  const overrides: Partial<Record<keyof Sizes, unknown>> = {};
  for (const pair of value('set')?.split(',') ?? []) {
    const [key, text] = pair.split('=') as [keyof Sizes, string];
    const base = QUICK[key];
    if (base === undefined || text === undefined) throw new Error(`--set: unknown size ${key}`);
    overrides[key] = Array.isArray(base)
      ? text.split('+').map(Number)
      : typeof base === 'boolean'
        ? text === 'true'
        : Number(text);
  }
  return { quick: flag('quick'), profile: flag('profile'), build: !flag('no-build'), only, runtime, overrides };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const started = new Date();
  const stamp = fileStamp(started);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const profileDir = args.profile ? path.join(RESULTS_DIR, 'profiles', stamp) : null;
  const loadBefore = loadavg();

  if (args.runtime === 'build') {
    if (args.build || !existsSync(path.join(BUILD_DIR, 'src', 'main.js'))) await buildHcp();
    compileBenchScripts();
  }
  const ctx = new BenchContext(
    { ...(args.quick ? QUICK : FULL), ...args.overrides } as Sizes,
    args.runtime,
    profileDir,
  );
  const results: ScenarioResult[] = [];
  const failures: Array<{ scenario: string; error: string }> = [];
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: cleaning up');
    void ctx.cleanup().then(() => process.exit(130));
  });

  const pg = await withClient(
    ADMIN_URL,
    async (c) => (await c.query('SHOW server_version')).rows[0].server_version as string,
  ).catch(() => 'unknown');
  const file = path.join(RESULTS_DIR, `${stamp}${args.quick ? '-quick' : ''}${args.profile ? '-profile' : ''}.json`);
  const report = () => ({
    startedAt: started.toISOString(),
    seconds: (Date.now() - started.getTime()) / 1000,
    mode: args.quick ? 'quick' : 'full',
    runtime: args.runtime,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memMb: Math.round(totalmem() / 2 ** 20),
      node: process.version,
      postgres: pg,
      loadavgBefore: loadBefore,
      loadavgAfter: loadavg(),
    },
    sizes: ctx.sizes,
    table: results.flatMap((r) => r.rows.map((row) => ({ ...row, ratio: ratio(row), verdict: verdict(row) }))),
    relativeTargets: relativeTargets(results.flatMap((r) => r.rows)),
    details: Object.fromEntries(results.map((r) => [r.name, r.details])),
    profiles: ctx.profiles,
    failures,
  });
  // Written after every scenario, so an interrupted run keeps what it measured.
  const save = () =>
    writeFileSync(file, `${JSON.stringify(report(), (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);

  for (const name of args.only) {
    if (interrupted) break;
    const t = Date.now();
    log(`== ${name}`);
    try {
      const result = await SCENARIOS[name]!(ctx);
      results.push(result);
      process.stderr.write(`${table([result])}\n`);
    } catch (err) {
      failures.push({ scenario: name, error: (err as Error).stack ?? String(err) });
      log(`${name} failed: ${(err as Error).stack}`);
    } finally {
      await ctx.cleanup();
    }
    save();
    log(`== ${name} took ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  const summary = report();

  process.stdout.write(
    `\nHCP benchmarks (${summary.mode}, ${summary.seconds.toFixed(0)} s, ${summary.machine.cpus} CPUs, load ${loadBefore.map((l) => l.toFixed(1)).join('/')} before)\n\n`,
  );
  process.stdout.write(`${table(results)}\n`);
  process.stdout.write(`\n${relativeTargetsTable(summary.relativeTargets)}\n`);
  for (const [label, p] of Object.entries(ctx.profiles)) {
    process.stdout.write(`\nprofile ${label} (${p.file}, ${p.idlePercent}% idle): self time\n`);
    for (const e of p.selfTop.slice(0, 12)) process.stdout.write(`  ${String(e.percent).padStart(5)}%  ${e.name}\n`);
    process.stdout.write(
      `  by area: ${p.byArea
        .slice(0, 8)
        .map((e) => `${e.name} ${e.percent}%`)
        .join(', ')}\n`,
    );
  }
  process.stdout.write(`\nresults: ${path.relative(ROOT, file)}\n`);
  if (failures.length) {
    process.stdout.write(`\nfailed: ${failures.map((f) => f.scenario).join(', ')}\n`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
