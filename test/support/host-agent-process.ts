import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface HostAgentOptions {
  hcp: string;
  token?: string;
  stateDir: string;
  identity: string;
  pool: string;
  consoleHost?: string;
  heartbeatIntervalMs?: number;
  extraArgs?: string[];
}

/**
 * The host agent as a real process (`npm run agent`'s entry point), so a test can SIGKILL it mid-call and
 * start it again on the same state folder, as systemd would.
 */
export class HostAgentProcess {
  private output = '';

  private constructor(private readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => this.append(d));
    child.stderr?.on('data', (d: Buffer) => this.append(d));
  }

  static start(options: HostAgentOptions): HostAgentProcess {
    const args = [
      path.join(ROOT, 'scripts/ts-run.js'),
      'src/host-agent/main.ts',
      '--hcp',
      options.hcp,
      '--state-dir',
      options.stateDir,
      '--identity',
      options.identity,
      '--pool',
      options.pool,
      '--heartbeat-interval-ms',
      String(options.heartbeatIntervalMs ?? 1000),
      '--claim-wait-ms',
      '5000',
      ...(options.token ? ['--token', options.token] : []),
      ...(options.consoleHost ? ['--console-host', options.consoleHost] : []),
      ...(options.extraArgs ?? []),
    ];
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new HostAgentProcess(child);
  }

  get logs(): string {
    return this.output;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.running) return Promise.resolve({ code: this.child.exitCode, signal: this.child.signalCode });
    return new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Kills it without a chance to report or give anything back, like a crash or a power cut. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    if (!this.running) return;
    const exited = this.exited();
    this.child.kill(signal);
    await exited;
  }

  private append(data: Buffer): void {
    this.output = (this.output + data.toString()).slice(-1_000_000);
  }
}
