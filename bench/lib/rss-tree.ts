import { readdirSync, readFileSync } from 'node:fs';
import { procCpuMs, procStatusKb } from './proc';
import { round } from './util';

/** The name cpuMsByProcess gives the PostgreSQL server's processes together. */
export const POSTGRES = 'postgres';

/** CPU time of each PostgreSQL server process now running on the machine (by its command name), in ms. */
function postgresCpuByPid(): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    const ms = procCpuMs(pid);
    if (ms !== null) cpu.set(pid, ms);
  }
  return cpu;
}

/** What the scenarios read of HCP's memory, whether HCP is one process or the launcher's several. */
export interface RssWatch {
  start(): this;
  beginWindow(): void;
  /** Highest RSS of the window of the process that serves the API (the largest API process), in MB. */
  peakMb(): number;
  hwmMb(): number | null;
  rssMb(): number | null;
  /** Highest RSS of the window per process (`launcher`, `api-1`, `worker+projections`, ...), in MB. */
  peaksByProcess(): Record<string, number>;
  /** Highest sum over all processes of one sample in the window, in MB. */
  sumPeakMb(): number;
  /** CPU time each process spent since beginWindow, in ms. */
  cpuMsByProcess(): Record<string, number>;
  stop(): void;
}

/**
 * Samples VmRSS of a process and of its children every `everyMs` (the launcher and the HCP processes it
 * forked; a child's name is its HCP_CHILD_NAME). A process without named children is its own API process,
 * so the same figures hold for one all-roles process.
 */
export class ProcessTreeRss implements RssWatch {
  private timer: NodeJS.Timeout | null = null;
  private peaks = new Map<string, number>();
  private sumPeak = 0;
  private readonly names = new Map<number, string>();
  private cpuAtWindowStart = new Map<string, number>();
  private postgresAtWindowStart = new Map<number, number>();

  constructor(
    private readonly rootPid: number,
    private readonly everyMs = 100,
  ) {}

  start(): this {
    this.timer = setInterval(() => this.sample(), this.everyMs);
    this.timer.unref();
    return this;
  }

  beginWindow(): void {
    this.peaks = new Map();
    this.sumPeak = 0;
    this.sample();
    this.cpuAtWindowStart = new Map(this.cpuNow());
    this.postgresAtWindowStart = postgresCpuByPid();
  }

  /**
   * CPU time each HCP process spent since beginWindow, and under `postgres` what every PostgreSQL server
   * process on the machine spent (the bench runs one scenario at a time, so that is HCP's database
   * work and the harness's few polls; a backend that ended inside the window is missed).
   */
  cpuMsByProcess(): Record<string, number> {
    const spent: Record<string, number> = {};
    for (const [name, ms] of this.cpuNow()) {
      const start = this.cpuAtWindowStart.get(name);
      if (start !== undefined) spent[name] = ms - start;
    }
    let postgres = 0;
    for (const [pid, ms] of postgresCpuByPid()) postgres += ms - (this.postgresAtWindowStart.get(pid) ?? 0);
    spent[POSTGRES] = postgres;
    return spent;
  }

  peakMb(): number {
    this.sample();
    const api = [...this.peaks].filter(([name]) => name.startsWith('api-')).map(([, kb]) => kb);
    const kb = api.length > 0 ? Math.max(...api) : (this.peaks.get('launcher') ?? 0);
    return kb / 1024;
  }

  hwmMb(): number | null {
    const processes = this.processes();
    const values = processes
      .filter((p) => p.name.startsWith('api-') || processes.length === 1)
      .map((p) => procStatusKb(p.pid, 'VmHWM'))
      .filter((kb): kb is number => kb !== null);
    return values.length > 0 ? Math.max(...values) / 1024 : null;
  }

  rssMb(): number | null {
    const values = this.processes().map((p) => procStatusKb(p.pid, 'VmRSS') ?? 0);
    return values.length > 0 ? values.reduce((a, b) => a + b, 0) / 1024 : null;
  }

  peaksByProcess(): Record<string, number> {
    this.sample();
    return Object.fromEntries([...this.peaks].map(([name, kb]) => [name, Math.round((kb / 1024) * 10) / 10]));
  }

  sumPeakMb(): number {
    this.sample();
    return this.sumPeak / 1024;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private sample(): void {
    let sum = 0;
    for (const { pid, name } of this.processes()) {
      const kb = procStatusKb(pid, 'VmRSS');
      if (kb === null) continue;
      sum += kb;
      if (kb > (this.peaks.get(name) ?? 0)) this.peaks.set(name, kb);
    }
    if (sum > this.sumPeak) this.sumPeak = sum;
  }

  private cpuNow(): Array<[string, number]> {
    return this.processes().flatMap(({ pid, name }) => {
      const ms = procCpuMs(pid);
      return ms === null ? [] : [[name, ms] as [string, number]];
    });
  }

  private processes(): Array<{ pid: number; name: string }> {
    const found = [{ pid: this.rootPid, name: 'launcher' }];
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${this.rootPid}/task/${this.rootPid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return found;
    }
    for (const pid of children) {
      // A name is remembered only once found: a child seen between its fork and its exec still shows the
      // launcher's environment, and remembering "no name" then left the worker out of a whole run.
      const name = this.names.get(pid) ?? childName(pid);
      if (name) {
        this.names.set(pid, name);
        found.push({ pid, name });
      }
    }
    return found;
  }
}

function childName(pid: number): string | null {
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return env.find((e) => e.startsWith('HCP_CHILD_NAME='))?.slice('HCP_CHILD_NAME='.length) ?? null;
  } catch {
    return null;
  }
}

/**
 * CPU ms per 2xx answer of a load window: of the API processes (the `api-*` children, or the one process
 * when HCP runs as one), of all HCP's processes together (worker and projections included), and per
 * process. PostgreSQL's CPU is not in it.
 */
export function cpuPerOk(
  cpuMsByProcess: Record<string, number>,
  ok: number,
): { api: number | null; all: number | null; postgres: number | null; byProcess: Record<string, number> } {
  // `all` is HCP's own processes, as in earlier results; PostgreSQL's share is its own figure.
  const entries = Object.entries(cpuMsByProcess).filter(([name]) => name !== POSTGRES);
  const postgres = cpuMsByProcess[POSTGRES];
  const children = entries.filter(([name]) => name !== 'launcher');
  const api = children.length > 0 ? children.filter(([name]) => name.startsWith('api-')) : entries;
  const sum = (list: Array<[string, number]>) => list.reduce((total, [, ms]) => total + ms, 0);
  return {
    api: msPerOk(sum(api), ok),
    all: msPerOk(sum(entries), ok),
    postgres: postgres === undefined ? null : msPerOk(postgres, ok),
    byProcess: Object.fromEntries(Object.entries(cpuMsByProcess).map(([name, ms]) => [name, Math.round(ms)])),
  };
}

/** CPU ms of one process's window (RssSampler.cpuMs) per 2xx answer, to the microsecond; null without either. */
export function msPerOk(cpuMs: number | null, ok: number): number | null {
  return cpuMs === null || ok === 0 ? null : round(cpuMs / ok, 3);
}
