import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/** The repository root. */
export const ROOT = path.join(__dirname, '..', '..');

/** Where every harness (bench/run.ts, memory/, cost/) writes its results. */
export const RESULTS_DIR = path.join(ROOT, 'bench', 'results');

/**
 * Samples a process's resident memory from /proc/<pid>/status (VmRSS every `everyMs`, VmHWM on demand).
 * Windows let one process's peak be reported per scenario, and the CPU it spent in the window.
 */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  private windowPeakKb = 0;
  private windowCpuStartMs: number | null = null;

  constructor(
    private readonly pid: number,
    private readonly everyMs = 100,
  ) {}

  start(): this {
    this.timer = setInterval(() => this.sample(), this.everyMs);
    this.timer.unref();
    return this;
  }

  /** Starts a new window: peak() then reports the highest RSS seen from now on. */
  beginWindow(): void {
    this.windowPeakKb = this.read('VmRSS') ?? 0;
    this.windowCpuStartMs = procCpuMs(this.pid);
  }

  /** CPU time (user + system) the process spent since beginWindow, in ms; null when it is gone. */
  cpuMs(): number | null {
    const now = procCpuMs(this.pid);
    return now === null || this.windowCpuStartMs === null ? null : now - this.windowCpuStartMs;
  }

  /** Highest RSS of the current window, in MB. */
  peakMb(): number {
    this.sample();
    return this.windowPeakKb / 1024;
  }

  /** Highest RSS of the whole process life (the kernel's high-water mark), in MB. */
  hwmMb(): number | null {
    const kb = this.read('VmHWM');
    return kb === null ? null : kb / 1024;
  }

  rssMb(): number | null {
    const kb = this.read('VmRSS');
    return kb === null ? null : kb / 1024;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private sample(): void {
    const kb = this.read('VmRSS');
    if (kb !== null && kb > this.windowPeakKb) this.windowPeakKb = kb;
  }

  private read(field: 'VmRSS' | 'VmHWM'): number | null {
    return procStatusKb(this.pid, field);
  }
}

/** One memory figure of /proc/<pid>/status in kB, or null when the process is gone. */
export function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) : null;
  } catch {
    return null; // the process is gone
  }
}

let clockTicksPerS: number | null = null;

/**
 * CPU time (user + system) a process has spent so far, from /proc/<pid>/stat, in ms (clock-tick
 * resolution, 10 ms here); null when the process is gone. Per request, it is the figure a loaded
 * machine disturbs least: other processes on the cores stretch latencies and cut rates, not the CPU a
 * request costs.
 */
export function procCpuMs(pid: number): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  clockTicksPerS ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerS;
}

/** A child process whose output is kept (the tail) for error messages. */
export class ManagedProcess {
  private output = '';
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (d: Buffer) => this.append(d));
    child.stderr?.on('data', (d: Buffer) => this.append(d));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static spawnNode(
    name: string,
    args: string[],
    env: Record<string, string>,
    options: { nodeFlags?: string[] } = {},
  ): ManagedProcess {
    const child = spawn(process.execPath, [...(options.nodeFlags ?? []), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ManagedProcess(name, child);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  get logs(): string {
    return this.output;
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 20_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  private append(data: Buffer): void {
    this.output = (this.output + data.toString()).slice(-20_000);
  }
}

/** Runs a node script to completion and returns its stdout (rejects with its output on failure). */
export function runNode(args: string[], env: Record<string, string> = {}, nodeFlags: string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-10_000)));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${args.join(' ')} exited with ${code}:\n${err}\n${out.slice(-2000)}`)),
    );
  });
}
