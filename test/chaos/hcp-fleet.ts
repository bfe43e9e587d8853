import type { ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { loadOrCreateDevSigningKey, type OpsRole, signDevToken, type TenantRole } from '@hcp/auth';
import { freePort } from '../support/hcp-process';
import { sleep } from './chaos-postgres';
import { killGroup, spawnTracked } from './children';

const ROOT = path.join(__dirname, '..', '..');

export interface CrashRecord {
  slot: number;
  at: string;
  code: number | null;
  signal: string | null;
  /** The last lines the process wrote before it died. */
  logTail: string;
}

export interface FleetEvents {
  onCrash(crash: CrashRecord): void;
  onStartFailure(slot: number, message: string): void;
}

/**
 * N HCP processes (slots) on one database and one data folder (shared dev signing key and keyring), each
 * on a port of its own that a restart keeps, as a load balancer's backend list would. A process that
 * exits without the suite asking is a crash: recorded, then started again, as a supervisor would.
 */
export class HcpFleet {
  readonly slots: HcpSlot[] = [];
  private closing = false;

  constructor(
    readonly dataDir: string,
    private readonly databaseUrl: string,
    private readonly env: Record<string, string>,
    private readonly events: FleetEvents,
    /** HCP compiled once for the run (see build.ts); unset: compiled on the fly by ts-node at every start. */
    private readonly buildDir?: string,
  ) {}

  async start(count: number): Promise<void> {
    // A port freePort found free may be offered again at once (it was closed): each slot needs its own,
    // or two instances fight over one port at every restart.
    const ports = new Set<number>();
    while (ports.size < count) ports.add(await freePort());
    for (const port of ports) this.slots.push(new HcpSlot(this.slots.length, port, this));
    // The first one migrates and creates the keyring alone; the others then only read them.
    await this.slots[0]?.start();
    await Promise.all(this.slots.slice(1).map((slot) => slot.start()));
  }

  get urls(): string[] {
    return this.slots.map((s) => s.baseUrl);
  }

  token(sub: string, projects: Record<string, TenantRole>, opsRoles: OpsRole[] = []): string {
    const key = loadOrCreateDevSigningKey(this.dataDir);
    return signDevToken(key, { sub, projects, opsRoles, issuer: 'hcp-dev', audience: 'hcp', ttlSeconds: 3600 });
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.slots.map((s) => s.terminate(30_000)));
  }

  /** @internal */
  spawn(port: number): ChildProcess {
    const entry = this.buildDir
      ? [path.join(this.buildDir, 'src', 'main.js')]
      : [path.join(ROOT, 'scripts/ts-run.js'), 'src/main.ts'];
    return spawnTracked(process.execPath, entry, {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PORT: String(port),
        HOST: '127.0.0.1',
        HCP_DATA_DIR: this.dataDir,
        DATABASE_URL: this.databaseUrl,
        LOG_LEVEL: 'warn',
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  /** @internal */
  get isClosing(): boolean {
    return this.closing;
  }

  /** @internal */
  get listener(): FleetEvents {
    return this.events;
  }
}

export class HcpSlot {
  private child?: ChildProcess;
  private output = '';
  private expectingExit = false;
  private restarting?: Promise<void>;
  starts = 0;

  constructor(
    readonly index: number,
    readonly port: number,
    private readonly fleet: HcpFleet,
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get logs(): string {
    return this.output;
  }

  async start(timeoutMs = 120_000): Promise<void> {
    this.expectingExit = false;
    const child = this.fleet.spawn(this.port);
    this.child = child;
    this.starts++;
    this.output += `\n===== chaos: start ${this.starts} of HCP ${this.index} at ${new Date().toISOString()} =====\n`;
    child.stdout?.on('data', (d: Buffer) => this.append(d));
    child.stderr?.on('data', (d: Buffer) => this.append(d));
    let ready = false;
    child.once('exit', (code, signal) => {
      if (this.expectingExit || this.fleet.isClosing) return;
      const tail = this.output.split('\n').slice(-40).join('\n');
      if (ready) {
        this.fleet.listener.onCrash({ slot: this.index, at: new Date().toISOString(), code, signal, logTail: tail });
      }
      this.restartAfterCrash();
    });
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.fleet.listener.onStartFailure(this.index, this.output.split('\n').slice(-20).join('\n'));
        return;
      }
      try {
        const res = await fetch(`${this.baseUrl}/health/ready`, { signal: AbortSignal.timeout(2_000) });
        if (res.status === 200) {
          ready = true;
          return;
        }
      } catch {
        // not listening yet
      }
      await sleep(200);
    }
    this.fleet.listener.onStartFailure(this.index, `not ready within ${timeoutMs} ms`);
    ready = true; // counted from now on: a later death is a crash
  }

  /** SIGKILL: no shutdown hook runs. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL', 10_000);
  }

  /** SIGTERM and wait; the time to exit, or undefined when it had to be SIGKILLed after `limitMs`. */
  async terminate(limitMs: number): Promise<number | undefined> {
    const started = Date.now();
    const exited = await this.signal('SIGTERM', limitMs);
    if (!exited) {
      await this.signal('SIGKILL', 10_000);
      return undefined;
    }
    return Date.now() - started;
  }

  /** Waits for a restart the crash handler started, if any. */
  async settled(): Promise<void> {
    await this.restarting;
  }

  private async signal(signal: NodeJS.Signals, waitMs: number): Promise<boolean> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return true;
    this.expectingExit = true;
    const exited = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), waitMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    this.output += `\n===== chaos: ${signal} at ${new Date().toISOString()} =====\n`;
    if (child.pid !== undefined) {
      // The whole group for SIGKILL (ts-run has no children today, but a crash must leave nothing behind);
      // SIGTERM only to HCP itself, as an orchestrator sends it.
      if (signal === 'SIGKILL') killGroup(child.pid, signal);
      else child.kill(signal);
    }
    return exited;
  }

  private restartAfterCrash(): void {
    this.restarting = (async () => {
      await sleep(1_000);
      if (!this.fleet.isClosing && !this.running) await this.start();
    })();
  }

  private append(data: Buffer): void {
    this.output = (this.output + data.toString()).slice(-2_000_000);
  }
}
