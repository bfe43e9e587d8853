import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { execFileAsync, readIfExists } from './support';

/**
 * Which processes belong to a cluster. What may be signalled is decided here, so anything short of
 * proof that a process is the cluster's server counts as someone else's.
 */

export interface PidFileInfo {
  pid: number | undefined;
  port: number | undefined;
  status: string | undefined;
}

/** postmaster.pid: pid, data dir, start time, port, socket dir, listen address, shmem key, status. */
export async function readPidFile(pgdata: string): Promise<PidFileInfo | undefined> {
  const text = await readIfExists(path.join(pgdata, 'postmaster.pid'));
  if (text === undefined) return undefined;
  const lines = text.split('\n');
  const int = (line: string | undefined) => {
    const n = Number.parseInt(line?.trim() ?? '', 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  return { pid: int(lines[0]), port: int(lines[3]), status: lines[7]?.trim() || undefined };
}

export type Identity = 'ours' | 'other' | 'gone';

/** Whether `pid` is the postmaster of `pgdata`. */
export async function identify(pid: number, pgdata: string): Promise<Identity> {
  return process.platform === 'linux' ? identifyLinux(pid, pgdata) : identifyWithPs(pid, pgdata);
}

async function identifyLinux(pid: number, pgdata: string): Promise<Identity> {
  if (!(await isAliveLinux(pid))) return 'gone';
  try {
    const argv = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    const dataFlag = argv.indexOf('-D');
    if (path.basename(argv[0] ?? '') !== 'postgres' || dataFlag < 0) return 'other';
    // A postmaster changes into its data directory (we also spawn it there); the cwd confirms the -D.
    const cwd = await fs.readlink(`/proc/${pid}/cwd`);
    return cwd === pgdata && path.resolve(cwd, argv[dataFlag + 1] ?? '') === pgdata ? 'ours' : 'other';
  } catch {
    return 'other';
  }
}

async function isAliveLinux(pid: number): Promise<boolean> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return false;
  // A zombie keeps its pid until reaped, which an orphan's new parent may never do.
  const state = stat.charAt(stat.lastIndexOf(')') + 2);
  return state !== 'Z' && state !== 'X';
}

async function identifyWithPs(pid: number, pgdata: string): Promise<Identity> {
  let out: string;
  try {
    out = (await execFileAsync('ps', ['-ww', '-o', 'stat=,command=', '-p', String(pid)])).stdout.trim();
  } catch {
    return 'gone';
  }
  if (out === '' || out.startsWith('Z')) return 'gone';
  const command = out.replace(/^\S+\s+/, '');
  // We launch it as "<bin>/postgres -D <pgdata> -c ...", so that is the shape to recognise.
  const [program = '', rest = ''] = command.split(' -D ', 2);
  return path.basename(program) === 'postgres' && rest.startsWith(`${pgdata} -c `) ? 'ours' : 'other';
}

/** Pids whose working directory is `pgdata`: every process of a server of that cluster. */
export async function processesInside(pgdata: string): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const found: number[] = [];
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await fs.readlink(`/proc/${entry}/cwd`).catch(() => undefined);
    if (cwd === pgdata && (await isAliveLinux(Number(entry)))) found.push(Number(entry));
  }
  return found;
}
