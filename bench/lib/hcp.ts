import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createServer } from 'node:net';
import * as ts from 'typescript';
import { loadOrCreateDevSigningKey, signDevToken, TenantRole } from '@hcp/auth';
import { ManagedProcess, ROOT, runNode } from './proc';
import { ProcessTreeRss, RssWatch } from './rss-tree';
import { summarizeProfile, ProfileSummary } from './profile';
import { log, sleep, waitFor } from './util';

/** Where the harness compiles HCP: the same steps as `npm run build`, into a folder of its own. */
export const BUILD_DIR = path.join(ROOT, 'bench', '.build');

export type Runtime = 'build' | 'ts';

/** Compiles the working tree (tsc + tsc-alias, as `npm run build`), so the benchmark runs what is checked out. */
export async function buildHcp(): Promise<void> {
  const started = Date.now();
  rmSync(BUILD_DIR, { recursive: true, force: true });
  const bin = (name: string) => path.join(ROOT, 'node_modules', name);
  await runNode([bin('typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', BUILD_DIR]).catch((err: Error) => {
    // tsc emits despite type errors (another engineer's change in progress); only a missing entry is fatal.
    if (!existsSync(path.join(BUILD_DIR, 'src', 'main.js'))) throw err;
    log(`tsc reported errors, running what it emitted:\n${err.message.slice(0, 1000)}`);
  });
  await runNode([bin('tsc-alias/dist/bin/index.js'), '-p', 'tsconfig.build.json', '--outDir', BUILD_DIR]);
  log(`compiled HCP into bench/.build in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * The harness's own child programs (baseline server and projector, rebuild runner, peers) as plain JavaScript
 * beside the compiled HCP, so neither side pays for ts-node (its compiler alone is ~80 MB of RSS).
 * They import HCP code by relative paths, which then resolve to the compiled copy.
 */
export function compileBenchScripts(): void {
  for (const dir of BENCH_SCRIPT_DIRS) {
    const from = path.join(ROOT, 'bench', dir);
    const to = path.join(BUILD_DIR, 'bench', dir);
    mkdirSync(to, { recursive: true });
    for (const file of readdirSync(from).filter((f) => f.endsWith('.ts'))) {
      const { outputText } = ts.transpileModule(readFileSync(path.join(from, file), 'utf8'), {
        compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
        fileName: file,
      });
      writeFileSync(path.join(to, file.replace(/\.ts$/, '.js')), outputText);
    }
  }
}

const BENCH_SCRIPT_DIRS = ['baseline', 'children', 'peers/emmett'];

/** How to run one of the harness's child programs (bench/baseline/*.ts, bench/children/*.ts). */
export function scriptArgs(runtime: Runtime, file: string): string[] {
  return runtime === 'build'
    ? [path.join(BUILD_DIR, file.replace(/\.ts$/, '.js'))]
    : [path.join(ROOT, 'scripts', 'ts-run.js'), file];
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface HcpOptions {
  databaseUrl: string;
  runtime: Runtime;
  env?: Record<string, string>;
  /** Preload bench/lib/profile-hook.js: profile() windows write V8 CPU profiles into this folder. */
  cpuProfDir?: string;
  /** Extra node/V8 flags for HCP's processes (the launcher passes its own to its children). */
  nodeFlags?: string[];
}

/**
 * HCP variables the harness's own environment passes to every HCP it starts: HCP_API_PROCESSES=0 measures
 * the one all-roles process of before; HCP_API_SEMI_SPACE_MB measures every row with that young generation.
 */
const PASSED_FROM_HARNESS = ['HCP_API_PROCESSES', 'HCP_API_SEMI_SPACE_MB'] as const;

function fromHarnessEnv(names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])));
}

/** The environment every benchmark runs HCP with: instant simulator, no rate limiting, quiet logs. */
export const BENCH_ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  HCP_SIMULATOR_LATENCY_SCALE: '0',
  HCP_RATE_LIMIT_ACTOR_PER_MINUTE: '10000000',
  HCP_RATE_LIMIT_PROJECT_PER_MINUTE: '10000000',
};

/**
 * HCP on a bench database: with HCP_ROLES, one process running those roles; without, the launcher of
 * `npm start` (API processes on one port and a worker+projections process).
 */
export class HcpUnderTest {
  private constructor(
    readonly process: ManagedProcess,
    readonly baseUrl: string,
    readonly port: number,
    readonly dataDir: string,
    readonly rss: RssWatch,
    private readonly profileDir: string | null,
    /** Started by the launcher (`npm start`): API processes and a worker+projections process. */
    readonly launcher: boolean,
  ) {}

  private profiles = 0;

  /**
   * Runs `work`; with --profile, HCP's CPU is profiled for exactly that long and the summary is
   * returned with the result (bench/lib/profile-hook.js).
   */
  async profiled<T>(work: () => Promise<T>): Promise<{ result: T; profile: ProfileSummary | null }> {
    if (!this.profileDir) return { result: await work(), profile: null };
    process.kill(this.process.pid, 'SIGUSR2');
    await sleep(50);
    const result = await work();
    process.kill(this.process.pid, 'SIGUSR2');
    const name = `${String(++this.profiles).padStart(2, '0')}.cpuprofile`;
    if (!this.launcher) {
      const file = path.join(this.profileDir, name);
      await waitFor('the CPU profile', async () => existsSync(file), 30_000, 50);
      return { result, profile: summarizeProfile(file) };
    }
    // One profile per child (bench/lib/profile-hook.js writes each into a folder named after it): the
    // first API process's is the row's, every child's is under `processes`.
    const children = Object.keys(this.rss.peaksByProcess()).filter((n) => n !== 'launcher');
    const files = children.map((child) => ({ child, file: path.join(this.profileDir!, child, name) }));
    await waitFor('the CPU profiles', async () => files.every((f) => existsSync(f.file)), 30_000, 50);
    const processes = Object.fromEntries(files.map((f) => [f.child, summarizeProfile(f.file)]));
    const main = processes['api-1'] ?? Object.values(processes)[0]!;
    return { result, profile: { ...main, processes } };
  }

  static async start(options: HcpOptions): Promise<HcpUnderTest> {
    const port = await freePort();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-bench-'));
    // All roles start the way `npm start` does: the launcher, its API processes and worker+projections.
    const launcher = !options.env?.HCP_ROLES && process.env.HCP_API_PROCESSES !== '0';
    const main = launcher ? path.join('src', 'launcher', 'main') : path.join('src', 'main');
    const entry =
      options.runtime === 'build'
        ? [path.join(BUILD_DIR, `${main}.js`)]
        : [path.join(ROOT, 'scripts', 'ts-run.js'), `${main}.ts`];
    const nodeFlags = [
      ...(options.nodeFlags ?? []),
      ...(options.cpuProfDir ? ['-r', path.join(ROOT, 'bench', 'lib', 'profile-hook.js')] : []),
    ];
    const child = ManagedProcess.spawnNode(
      'hcp',
      entry,
      {
        ...BENCH_ENV,
        DATABASE_URL: options.databaseUrl,
        PORT: String(port),
        HOST: '127.0.0.1',
        HCP_DATA_DIR: dataDir,
        ...(options.cpuProfDir ? { HCP_BENCH_PROFILE_DIR: options.cpuProfDir } : {}),
        // HCP_BENCH_PROFILE_HEAP=1 with --profile: the hook samples allocations too (profile-hook.js).
        ...(options.cpuProfDir && process.env.HCP_BENCH_PROFILE_HEAP ? { HCP_BENCH_PROFILE_HEAP: '1' } : {}),
        ...fromHarnessEnv(PASSED_FROM_HARNESS),
        ...options.env,
      },
      { nodeFlags },
    );
    const hcp = new HcpUnderTest(
      child,
      `http://127.0.0.1:${port}`,
      port,
      dataDir,
      new ProcessTreeRss(child.pid).start(),
      options.cpuProfDir ?? null,
      launcher,
    );
    await hcp.waitUntilReady();
    return hcp;
  }

  /** A dev token for this process's signing key (the same one `npm run token` makes). */
  token(projects: Record<string, TenantRole>, sub = 'bench'): string {
    const key = loadOrCreateDevSigningKey(this.dataDir);
    return signDevToken(key, { sub, projects, opsRoles: [], issuer: 'hcp-dev', audience: 'hcp', ttlSeconds: 6 * 3600 });
  }

  async stop(): Promise<void> {
    this.rss.stop();
    await this.process.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  private async waitUntilReady(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.process.running) throw new Error(`HCP exited at start:\n${this.process.logs}`);
      try {
        const res = await fetch(`${this.baseUrl}/health/ready`);
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    await this.process.stop(1000);
    throw new Error(`HCP was not ready within ${timeoutMs} ms:\n${this.process.logs}`);
  }
}
