import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { loadOrCreateDevSigningKey, signDevToken } from '@hcp/auth';
import { loadConfig } from '../../src/config/hcp-config';
import { API_ENV, apiNodeFlags } from '../../src/launcher/child-specs';
import { SEEDED } from '../lib/context';
import { createBenchDatabase } from '../lib/db';
import { BENCH_ENV, BUILD_DIR, buildHcp, freePort } from '../lib/hcp';
import { runLoad, LoadResult } from '../lib/load';
import { ManagedProcess, RESULTS_DIR, ROOT, RssSampler } from '../lib/proc';
import { seedVmReadModel } from '../lib/seed';
import { fileStamp, log, round, sleep } from '../lib/util';
import { summarizeAllocations } from './allocation-summary';
import { summarizeHeapSnapshot, HeapSummary } from './heap-summary';

/*
 * The memory of ONE HCP API process (issue #21 item 5): `node scripts/ts-run.js bench/memory/api-memory.ts`.
 * The process runs as the launcher runs its API children (compiled build, HCP_ROLES=api, apiNodeFlags:
 * the default configuration's, or HCP_API_SEMI_SPACE_MB's from the harness's environment,
 * no catalog seeding, the pool size the launcher gives each of two API processes on a 100-connection
 * server) on a scratch database holding 100,000 VMs of one project in vm_read_model. Reported: RSS and
 * heap at idle after start, and after a forced major GC; peak RSS / heap (sampled every 100 ms) and GC
 * time during a detail-read load and a list load (10 connections, 10 s each, after a 3 s warm-up), with
 * reads/s and the process's CPU per read; the post-GC heap after the loads. With --snapshot, a fresh process (so the snapshot's own
 * allocations cannot touch the load figures) writes a heap snapshot at idle after a major GC, and
 * heap-summary.ts explains it. With --allocations, each load window runs V8's sampling heap profiler (garbage
 * included; its own cost makes that window's rate and CPU figures not comparable with a run without it),
 * and allocation-summary.ts reports the bytes a read allocates and where.
 *
 * Options: --no-build (reuse bench/.build), --flags=<comma-separated V8 flags> (instead of the launcher's;
 * `--flags=` for none), --vms=100000, --seconds=10, --warmup=3, --snapshot, --allocations, --label=<name>.
 * Writes bench/results/memory-<timestamp>-<label>.json; snapshots and allocation profiles go under
 * bench/results/profiles/memory/.
 */

interface Options {
  build: boolean;
  flags: string[];
  vms: number;
  seconds: number;
  warmup: number;
  snapshot: boolean;
  allocations: boolean;
  label: string;
}

function options(argv: string[]): Options {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const flags = value('flags');
  return {
    build: !argv.includes('--no-build'),
    flags:
      flags === undefined
        ? apiNodeFlags(loadConfig({ HCP_API_SEMI_SPACE_MB: process.env.HCP_API_SEMI_SPACE_MB }))
        : flags.split(',').filter(Boolean),
    vms: Number(value('vms') ?? 100_000),
    seconds: Number(value('seconds') ?? 10),
    warmup: Number(value('warmup') ?? 3),
    snapshot: argv.includes('--snapshot'),
    allocations: argv.includes('--allocations'),
    label: value('label') ?? 'run',
  };
}

const HOOK = path.join(ROOT, 'bench', 'memory', 'memory-hook.js');
const PROFILES = path.join(RESULTS_DIR, 'profiles', 'memory');

interface Usage {
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  arrayBuffersMb: number;
}

interface WindowFigures {
  peak: { rssMb: number; heapUsedMb: number; heapTotalMb: number };
  samples: number;
  gc: Record<string, { count: number; ms: number }>;
  ms: number;
  cpuMs: number;
  end: Usage;
}

/** One HCP API process with the memory hook, answering over its IPC channel. */
class ApiProcess {
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: Record<string, unknown>) => void>();
  readonly rss: RssSampler;

  private constructor(
    readonly process: ManagedProcess,
    readonly baseUrl: string,
    readonly dataDir: string,
  ) {
    this.rss = new RssSampler(process.pid).start();
    process.child.on('message', (msg: { id?: number }) => {
      const done = msg?.id === undefined ? undefined : this.waiting.get(msg.id);
      if (done) {
        this.waiting.delete(msg.id!);
        done(msg as Record<string, unknown>);
      }
    });
  }

  static async start(databaseUrl: string, flags: string[]): Promise<ApiProcess> {
    const port = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-memory-'));
    const child = spawn(process.execPath, [...flags, '-r', HOOK, path.join(BUILD_DIR, 'src', 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        ...BENCH_ENV,
        DATABASE_URL: databaseUrl,
        PORT: String(port),
        HOST: '127.0.0.1',
        HCP_DATA_DIR: dataDir,
        // As the launcher starts an API child (src/launcher/child-specs.ts): two API processes and the
        // background one on a server of max_connections 100 give each API process pools of 12.
        HCP_ROLES: 'api',
        HCP_SEED_CATALOG: 'false',
        HCP_DB_POOL_SIZE: '12',
        ...API_ENV,
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const api = new ApiProcess(new ManagedProcess('hcp-api', child), `http://127.0.0.1:${port}`, dataDir);
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (!api.process.running) throw new Error(`HCP exited at start:\n${api.process.logs}`);
      try {
        if ((await fetch(`${api.baseUrl}/health/ready`)).status === 200) return api;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        await api.stop();
        throw new Error(`HCP was not ready within 90 s:\n${api.process.logs}`);
      }
      await sleep(100);
    }
  }

  ask<T>(cmd: string, extra: Record<string, unknown> = {}): Promise<T> {
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, (answer) =>
        answer.error ? reject(new Error(String(answer.error))) : resolve(answer as unknown as T),
      );
      this.process.child.send({ cmd: `mem:${cmd}`, id, ...extra });
    });
  }

  memory(gc: boolean): Promise<{ usage: Usage; spaces: Record<string, { usedMb: number; sizeMb: number }> }> {
    return this.ask('memory', { gc });
  }

  token(): string {
    const key = loadOrCreateDevSigningKey(this.dataDir);
    return signDevToken(key, {
      sub: 'bench',
      projects: { bench: 'viewer' },
      opsRoles: [],
      issuer: 'hcp-dev',
      audience: 'hcp',
      ttlSeconds: 6 * 3600,
    });
  }

  async stop(): Promise<void> {
    this.rss.stop();
    await this.process.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

const r = (u: Usage) => ({
  rssMb: round(u.rssMb),
  heapUsedMb: round(u.heapUsedMb),
  heapTotalMb: round(u.heapTotalMb),
  externalMb: round(u.externalMb),
});

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  if (opts.build) await buildHcp();
  log(
    `V8 flags of the API process: ${opts.flags.join(' ') || '(none)'}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const db = await createBenchDatabase();
  let api: ApiProcess | null = null;
  const result: Record<string, unknown> = {
    at: new Date().toISOString(),
    label: opts.label,
    flags: opts.flags,
    vms: opts.vms,
    seconds: opts.seconds,
    loadAverageBefore: loadavg(),
  };
  try {
    const started = Date.now();
    api = await ApiProcess.start(db.url, opts.flags);
    log(`HCP API process ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const client = new Client({ connectionString: db.url });
    await client.connect();
    await seedVmReadModel(client, 'bench', 1, opts.vms, SEEDED);
    await client.end();
    log(`seeded ${opts.vms.toLocaleString('en-US')} VMs`);
    await sleep(2000);
    const idle = await api.memory(false);
    const idleGc = await api.memory(true);
    result.idle = r(idle.usage);
    result.idleAfterGc = { ...r(idleGc.usage), rssProcMb: round(api.rss.rssMb()) };
    result.idleSpacesAfterGc = Object.fromEntries(
      Object.entries(idleGc.spaces).map(([k, v]) => [k, { usedMb: round(v.usedMb), sizeMb: round(v.sizeMb) }]),
    );
    log(`idle: ${JSON.stringify(result.idle)}; after a major GC: ${JSON.stringify(result.idleAfterGc)}`);

    const headers = { authorization: `Bearer ${api.token()}` };
    for (const kind of ['detail', 'list'] as const) {
      const spec = {
        url: api.baseUrl,
        method: 'GET' as const,
        path: kind === 'detail' ? '/v1/projects/bench/vms/{vm}' : '/v1/projects/bench/vms?limit=50',
        headers,
        connections: 10,
        durationS: opts.seconds,
        vmCount: opts.vms,
      };
      await runLoad({ ...spec, durationS: opts.warmup });
      api.rss.beginWindow();
      await api.ask('window-start');
      if (opts.allocations) await api.ask('alloc-start');
      const load: LoadResult = await runLoad(spec);
      const allocations = opts.allocations ? path.join(PROFILES, `${opts.label}-${kind}.heapprofile`) : undefined;
      if (allocations) {
        mkdirSync(PROFILES, { recursive: true });
        await api.ask('alloc-stop', { file: allocations });
      }
      const w = await api.ask<WindowFigures>('window-stop');
      const peakRss = api.rss.peakMb();
      const after = await api.memory(true);
      const figures = {
        readsPerS: round(load.okPerS),
        // The API process's CPU per answered read: steadier than the rate on a shared machine.
        cpuMsPerRead: round(w.cpuMs / Math.max(1, load.ok), 3),
        non2xx: load.requests - load.ok,
        p50Ms: round(load.latencyMs?.p50, 2),
        p99Ms: round(load.latencyMs?.p99, 2),
        peakRssMb: round(peakRss),
        peakHeapUsedMb: round(w.peak.heapUsedMb),
        peakHeapTotalMb: round(w.peak.heapTotalMb),
        endOfWindow: r(w.end),
        gc: Object.fromEntries(Object.entries(w.gc).map(([k, g]) => [k, { count: g.count, ms: round(g.ms) }])),
        gcShareOfWindow: round(Object.values(w.gc).reduce((s, g) => s + g.ms, 0) / w.ms, 3),
        afterGc: r(after.usage),
        ...(allocations ? { allocations: summarizeAllocations(allocations, load.ok) } : {}),
      };
      result[kind] = figures;
      log(`${kind}: ${JSON.stringify(figures)}`);
    }
    result.loadAverageAfter = loadavg();
    if (opts.snapshot) {
      await api.stop();
      api = await ApiProcess.start(db.url, opts.flags);
      await sleep(2000);
      mkdirSync(PROFILES, { recursive: true });
      const file = path.join(PROFILES, `${opts.label}-idle.heapsnapshot`);
      const snap = await api.ask<{ usage: Usage; file: string }>('snapshot', { file });
      log(`heap snapshot at idle (heap used ${snap.usage.heapUsedMb.toFixed(1)} MB after a major GC): ${file}`);
      await api.stop();
      api = null;
      const summary: HeapSummary = summarizeHeapSnapshot(file);
      result.snapshot = { heapUsedAfterGcMb: round(snap.usage.heapUsedMb), ...summary };
    }
  } finally {
    await api?.stop().catch(() => undefined);
    await db.drop().catch((err: Error) => log(`dropping ${db.name}: ${err.message}`));
  }
  const out = path.join(RESULTS_DIR, `memory-${fileStamp(new Date(result.at as string))}-${opts.label}.json`);
  writeFileSync(out, `${JSON.stringify(result, null, 1)}\n`);
  log(`wrote ${path.relative(ROOT, out)}`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
