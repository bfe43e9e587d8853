import * as path from 'node:path';
import { ROOT, runNode } from './proc';

/** What bench/load/cannon.js is asked to send. `{project}`, `{vm}` and `{n}` in path and body vary per request. */
export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  connections: number;
  /** Run for this long, unless `amount` is given. */
  durationS?: number;
  /** Send exactly this many requests. */
  amount?: number;
  /** Requests per second across all connections: an open loop, each latency from the request's intended send time (coordinated omission corrected; see bench/load/cannon.js). */
  overallRate?: number;
  /** Projects `{project}` picks from. */
  projects?: string[];
  /** `{vm}` picks one of the seeded VMs 1..vmCount. */
  vmCount?: number;
  timeoutS?: number;
}

export interface LoadResult {
  requests: number;
  /** 2xx responses. */
  ok: number;
  okPerS: number;
  durationS: number;
  wallS: number;
  statusCounts: Record<string, number>;
  errorSamples: Array<{ status: number; body: string }>;
  errors: number;
  timeouts: number;
  /** Of 2xx responses, at full resolution. */
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number } | null;
}

/** Runs autocannon in a process of its own (it must not share a CPU budget or event loop with HCP or the harness). */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const out = await runNode([
    path.join(ROOT, 'bench', 'load', 'cannon.js'),
    JSON.stringify({ projects: ['bench'], vmCount: 1, ...spec }),
  ]);
  const line = out.trim().split('\n').pop()!;
  return JSON.parse(line) as LoadResult;
}
