import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ROOT } from './proc';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  name: string;
  ms: number;
  percent: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  idlePercent: number;
  /** Functions by self time. */
  selfTop: ProfileEntry[];
  /** Functions of HCP's own code (src/, libs/, projections/) by inclusive time. */
  hcpInclusiveTop: ProfileEntry[];
  /** Self time grouped by where the code lives: an HCP folder, an npm package, node internals, GC. */
  byArea: ProfileEntry[];
  /** Share of busy time with code of each area anywhere on the stack (overlapping: a sum exceeds 100%). */
  areaOnStack: ProfileEntry[];
  /** SQL round trips HCP made in the window (pg Client#query calls), by statement shape. */
  sql?: { roundTrips: number; top: Array<{ statement: string; count: number }> };
  /** process.memoryUsage() of HCP at the end of the window, in MB. */
  memoryMb?: Record<string, number>;
  /** HCP started by the launcher: each child's own summary (the fields above are `api-1`'s). */
  processes?: Record<string, ProfileSummary>;
}

/** Where a function lives: `src/vms`, `node_modules/typeorm`, `node:internal`, `(garbage collector)`. */
function areaOf(frame: ProfileNode['callFrame']): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) return 'node:internal';
  const file = url.replace(/^file:\/\//, '');
  const nm = file.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = file.slice(nm + 'node_modules/'.length).split('/');
    return `node_modules/${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const rel = path.relative(ROOT, file).replace(/^bench\/\.build\//, '');
  const parts = rel.split('/');
  return parts.length > 2 ? parts.slice(0, parts[0] === 'libs' ? 3 : 2).join('/') : rel;
}

function nameOf(frame: ProfileNode['callFrame']): string {
  const url = frame.url.replace(/^file:\/\//, '');
  const nm = url.lastIndexOf('node_modules/');
  const where = !url
    ? ''
    : nm >= 0
      ? url.slice(nm + 'node_modules/'.length)
      : path.relative(ROOT, url).replace(/^bench\/\.build\//, '');
  return `${frame.functionName || '(anonymous)'}${where ? ` ${where}:${frame.lineNumber + 1}` : ''}`;
}

const isHcp = (frame: ProfileNode['callFrame']) => {
  const url = frame.url.replace(/^file:\/\//, '');
  return url.startsWith(ROOT) && !url.includes('node_modules/') && /\/(src|libs|projections)\//.test(url);
};

/** Says where the time of a .cpuprofile went (a folder: its newest profile). */
export function summarizeProfile(fileOrDir: string, top = 25): ProfileSummary {
  let file = fileOrDir;
  if (!fileOrDir.endsWith('.cpuprofile')) {
    const files = readdirSync(fileOrDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .sort();
    if (files.length === 0) throw new Error(`no .cpuprofile in ${fileOrDir}`);
    file = path.join(fileOrDir, files[files.length - 1]!);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const area = new Map<string, number>();
  const onStack = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000; // µs -> ms
    if (dt <= 0) continue;
    const leaf = byId.get(profile.samples[i]!)!;
    // The profiler's own start-up (bench/lib/profile-hook.js) is not HCP's time.
    let hook = false;
    for (let id: number | undefined = leaf.id; id !== undefined && !hook; id = parent.get(id))
      hook = byId.get(id)!.callFrame.url.endsWith('profile-hook.js');
    if (hook) continue;
    total += dt;
    if (leaf.callFrame.functionName === '(idle)') {
      idle += dt;
      continue;
    }
    const leafName = nameOf(leaf.callFrame);
    self.set(leafName, (self.get(leafName) ?? 0) + dt);
    const leafArea = areaOf(leaf.callFrame);
    area.set(leafArea, (area.get(leafArea) ?? 0) + dt);
    const seen = new Set<string>();
    const areas = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (frame.url) areas.add(areaOf(frame));
      if (!isHcp(frame)) continue;
      const name = nameOf(frame);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + dt);
    }
    for (const a of areas) onStack.set(a, (onStack.get(a) ?? 0) + dt);
  }
  const busy = total - idle;
  const entries = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), percent: Math.round((1000 * ms) / Math.max(1, busy)) / 10 }));
  const queriesFile = file.replace(/\.cpuprofile$/, '.queries.json');
  let sql: ProfileSummary['sql'];
  if (existsSync(queriesFile)) {
    const counts = JSON.parse(readFileSync(queriesFile, 'utf8')) as Record<string, number>;
    const list = Object.entries(counts).map(([statement, count]) => ({ statement, count }));
    sql = { roundTrips: list.reduce((n, q) => n + q.count, 0), top: list.slice(0, 20) };
  }
  const memoryFile = file.replace(/\.cpuprofile$/, '.memory.json');
  const memoryMb = existsSync(memoryFile)
    ? Object.fromEntries(
        Object.entries(JSON.parse(readFileSync(memoryFile, 'utf8')) as Record<string, number>).map(([k, v]) => [
          k,
          Math.round(v / 2 ** 20),
        ]),
      )
    : undefined;
  return {
    ...(sql ? { sql } : {}),
    ...(memoryMb ? { memoryMb } : {}),
    file: path.relative(ROOT, file),
    totalMs: Math.round(total),
    idlePercent: Math.round((1000 * idle) / Math.max(1, total)) / 10,
    selfTop: entries(self, top),
    hcpInclusiveTop: entries(inclusive, top),
    byArea: entries(area, top),
    areaOnStack: entries(onStack, top),
  };
}
