import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadOrCreateDevSigningKey, OpsRole, signDevToken, TenantRole } from '@hcp/auth';

const ROOT = path.join(__dirname, '..', '..');

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

export interface HcpProcessOptions {
  /** Unset: HCP starts its embedded PostgreSQL in dataDir. */
  databaseUrl?: string;
  dataDir?: string;
  env?: Record<string, string>;
}

/**
 * HCP as a real process (the same entry point as `npm start`, compiled on the fly), so tests can
 * SIGKILL it mid-job and start it again on the same database and data folder.
 */
export class HcpProcess {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    readonly baseUrl: string,
    readonly dataDir: string,
  ) {
    child.stdout?.on('data', (d: Buffer) => this.append(d));
    child.stderr?.on('data', (d: Buffer) => this.append(d));
  }

  static async start(options: HcpProcessOptions = {}): Promise<HcpProcess> {
    const port = await freePort();
    const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'hcp-e2e-'));
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/ts-run.js'), 'src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PORT: String(port),
        HOST: '127.0.0.1',
        HCP_DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        HCP_WORKER_POLL_MS: '100',
        // No DATABASE_URL: the embedded PostgreSQL on the data folder's own port, as `npm start` would.
        ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const hcp = new HcpProcess(child, `http://127.0.0.1:${port}`, dataDir);
    await hcp.waitUntilReady();
    return hcp;
  }

  /** Signs a dev token with the key in this process's data folder. */
  token(sub: string, projects: Record<string, TenantRole>, opsRoles: OpsRole[] = []): string {
    const key = loadOrCreateDevSigningKey(this.dataDir);
    return signDevToken(key, { sub, projects, opsRoles, issuer: 'hcp-dev', audience: 'hcp', ttlSeconds: 600 });
  }

  get logs(): string {
    return this.output;
  }

  /** Kills without any chance to clean up, like a crash or an OOM kill. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** Graceful stop (SIGTERM), as a deployment would. */
  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Whether the process is still running (it has not exited, whatever its readiness says). */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves once the process has exited: its exit code, or the signal that ended it. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.running) return Promise.resolve({ code: this.child.exitCode, signal: this.child.signalCode });
    return new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  removeDataDir(): void {
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    await exited;
  }

  private async waitUntilReady(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`HCP exited with ${this.child.exitCode}:\n${this.output}`);
      try {
        const res = await fetch(`${this.baseUrl}/health/ready`);
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await this.kill();
    throw new Error(`HCP was not ready within ${timeoutMs} ms:\n${this.output}`);
  }

  private append(data: Buffer): void {
    this.output = (this.output + data.toString()).slice(-4_000_000);
  }
}
