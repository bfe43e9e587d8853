import { execFile, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

/** deploy/monitoring/, whose rules, tests and dashboard these suites hold to a real Prometheus. */
export const MONITORING_DIR = path.join(__dirname, '..', '..', '..', 'deploy', 'monitoring');

const run = promisify(execFile);

/** The binary named by `envName`, or else the first `name` on PATH; null when neither is executable. */
function locate(envName: string, name: string): string | null {
  const candidates = [
    process.env[envName],
    ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => dir && path.join(dir, name)),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}

export interface PrometheusBinaries {
  promtool: string;
  prometheus: string;
}

export function prometheusBinaries(): PrometheusBinaries | null {
  const promtool = locate('HCP_PROMTOOL_BIN', 'promtool');
  const prometheus = locate('HCP_PROMETHEUS_BIN', 'prometheus');
  return promtool && prometheus ? { promtool, prometheus } : null;
}

/**
 * `describe` when promtool and prometheus are installed; otherwise a suite that fails in CI (CI=true)
 * and is skipped with a message locally.
 */
export function describeWithPrometheus(name: string, body: (bins: PrometheusBinaries) => void): void {
  const bins = prometheusBinaries();
  if (bins) {
    describe(name, () => body(bins));
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs promtool and prometheus (HCP_PROMTOOL_BIN, HCP_PROMETHEUS_BIN), which CI installs with .ci/prometheus.sh', () => {
        throw new Error('promtool or prometheus is missing: run `bash .ci/prometheus.sh` (Debian package prometheus)');
      });
    });
    return;
  }
  console.warn(
    `skipping "${name}": promtool or prometheus is missing (run \`bash .ci/prometheus.sh\`, or set HCP_PROMTOOL_BIN and HCP_PROMETHEUS_BIN; CI=true fails instead)`,
  );
  describe.skip(name, () => body({ promtool: 'promtool', prometheus: 'prometheus' }));
}

export interface ToolRun {
  code: number;
  output: string;
}

/** Runs promtool with these arguments in `cwd`; its exit code and what it printed (never throws for a non-zero code). */
export async function promtool(bins: PrometheusBinaries, args: string[], cwd: string): Promise<ToolRun> {
  try {
    const { stdout, stderr } = await run(bins.promtool, args, { cwd, timeout: 120_000 });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const failed = err as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw err;
    return { code: failed.code, output: (failed.stdout ?? '') + (failed.stderr ?? '') };
  }
}

/** A folder of its own for one test's files, removed by `remove`. */
export function scratchDir(prefix: string): { dir: string; write(name: string, text: string): string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return {
    dir,
    write: (name, text) => {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** One answer of Prometheus's query API. */
export interface QueryAnswer {
  status: 'success' | 'error';
  errorType?: string;
  error?: string;
  data?: { resultType: string; result: Array<{ metric: Record<string, string>; value?: [number, string] }> };
}

/**
 * A real Prometheus on a free loopback port with a temporary config and storage folder, started by a
 * test and stopped by it.
 */
export class PrometheusServer {
  private output = '';

  private constructor(
    private readonly child: ReturnType<typeof spawn>,
    readonly baseUrl: string,
    private readonly scratch: ReturnType<typeof scratchDir>,
  ) {
    child.stdout?.on('data', (d: Buffer) => this.append(d));
    child.stderr?.on('data', (d: Buffer) => this.append(d));
  }

  static async start(bins: PrometheusBinaries, port: number, config: string): Promise<PrometheusServer> {
    const scratch = scratchDir('hcp-prometheus-');
    const configFile = scratch.write('prometheus.yml', config);
    const child = spawn(
      bins.prometheus,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${path.join(scratch.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const server = new PrometheusServer(child, `http://127.0.0.1:${port}`, scratch);
    await server.waitUntilReady();
    return server;
  }

  get logs(): string {
    return this.output;
  }

  async query(expr: string): Promise<QueryAnswer> {
    const res = await fetch(`${this.baseUrl}/api/v1/query?${new URLSearchParams({ query: expr })}`, {
      signal: AbortSignal.timeout(10_000),
    });
    return (await res.json()) as QueryAnswer;
  }

  async get<T>(pathAndQuery: string): Promise<T> {
    const res = await fetch(`${this.baseUrl}${pathAndQuery}`, { signal: AbortSignal.timeout(10_000) });
    return (await res.json()) as T;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    this.scratch.remove();
  }

  private async waitUntilReady(): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`prometheus exited with ${this.child.exitCode}:\n${this.output}`);
      try {
        const res = await fetch(`${this.baseUrl}/-/ready`, { signal: AbortSignal.timeout(2_000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`prometheus was not ready within 60 s:\n${this.output}`);
  }

  private append(chunk: Buffer): void {
    this.output = (this.output + chunk.toString()).slice(-20_000);
  }
}
