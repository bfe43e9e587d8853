import cluster from 'node:cluster';
import { HcpConfig } from '../config/hcp-config';
import { ChildSpec } from './process-supervisor';

/**
 * Connections left to others on the database server (`npm run admin`, psql, a second tool): the children
 * share the rest. Without this, pools of 20 in two API processes and the background one (120
 * connections) overran a default server's 100 under load, and creates were refused 503 as an outage.
 */
const CONNECTIONS_LEFT_TO_OTHERS = 10;
const BACKGROUND_POOL_SIZE = 20;
const MAX_API_POOL_SIZE = 20;

/**
 * Jobs the worker process runs at once unless HCP_WORKER_CONCURRENCY says otherwise. Most of a job's
 * time is HCP's own steps (loading, recording, the queue row), which wait on the database and batch
 * better the more jobs share them; what reaches a provider is bounded per cluster instead
 * (HCP_PROVIDER_CALLS_PER_CLUSTER), and drivers run the calls of one VM one after another themselves.
 * Measured on a burst of 1,000 creates (bench/README.md, the nineteenth session): 128 slots finished it
 * in less CPU per job and sooner than 32 or 64.
 */
const BACKGROUND_WORKER_CONCURRENCY = '128';

/**
 * V8 flags of an API process.
 *
 * The young generation (HCP_API_SEMI_SPACE_MB, 8 MB semi-spaces by default instead of V8's 16) is the
 * trade between memory and write throughput. V8 rounds the size up to a power of two, so the setting takes
 * only those. Under reads, a larger one only holds pages: peak RSS at 100,000 VMs was 127-133 MB at 4,
 * 133-142 MB at 8 and 142-157 MB at 16 (bench/memory/api-memory.ts, the twenty-fourth and twenty-fifth
 * sessions; the "12 MB" measured there ran as 16). Under creates, a request waits ~170 ms for its group
 * commit (100 clients at ~600 creates/s) holding ~50 KB, and the API allocates ~150 KB per create: with 4 MB
 * semi-spaces that state outlives two scavenges and is promoted, so garbage collection (scavenges copying
 * it, then major GCs marking it) is ~40 % of the API's CPU. Closed-loop write windows made 7-10 % more
 * creates/s at 8 than at 4 in each of three sessions, and 10-34 % more at 16 (bench/README.md, the
 * twenty-second, twenty-fourth and twenty-fifth sessions); 16 breaks the 150 MB read target.
 *
 * The live heap of an API process is ~45 MB (mostly the code and source text of the ~2,800 modules it
 * loads), but V8's default growth factor (up to 4x the live heap after each major GC, with a multi-GB
 * limit) let the old space fill to ~190 MB of promoted garbage before collecting: 254-267 MB peak RSS
 * under 10 s of reads at 100,000 VMs. `--heap-growing-percent` makes the next major GC come at that much
 * above the live heap instead, with no hard cap (unlike --max-old-space-size, a large answer cannot make
 * the process run out of heap). At 50 the peak was 146-153 MB, on both sides of the 150 MB target from
 * run to run; at 35, with API_ENV, 137-145 MB, reads costing the same CPU within the noise
 * (bench/README.md, "Issue #21 item 5" and the nineteenth session).
 *
 * Allocation-site pretenuring is off: V8 allocates a site's objects straight in the old space once most
 * of them have survived a scavenge, and while an API process warms up some of the request path's sites
 * (passport's per-request strategy among them) qualify. From then on every request made old objects
 * pointing at its young ones, and a scavenge keeps whatever an old object points at, dead or not: each
 * request's headers, body and request objects were copied, promoted and left for the next major GC.
 * Under detail reads that was ~530 KB of every ~3 MB a scavenge found; without pretenuring, ~3 KB
 * (with ServingState's list). bench/README.md, the twenty-fourth session.
 */
export function apiNodeFlags(config: Pick<HcpConfig, 'apiSemiSpaceMb'>): string[] {
  return [
    `--max-semi-space-size=${config.apiSemiSpaceMb}`,
    '--heap-growing-percent=35',
    '--no-allocation-site-pretenuring',
  ];
}

/**
 * Environment of an API process besides HCP's own variables. glibc gives each thread that allocates its
 * own malloc arena (up to 8 per core), and memory freed in one is not reused by another: two arenas held
 * the peak RSS of an API process 2 MB lower under reads (same measurements as apiNodeFlags). Ignored
 * by other C libraries. An operator's own MALLOC_ARENA_MAX is kept.
 */
export const API_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

export interface ChildSpecs {
  /** The job worker and the projections, in one process: it also seeds the catalog. */
  background: ChildSpec;
  api: ChildSpec[];
}

export interface ChildSpecsInput {
  /** Variables every child gets (SharedRuntime.env). */
  shared: Record<string, string>;
  /** What the database server allows ordinary roles (SharedRuntime.connectionLimit). */
  connectionLimit: number;
  /** The launcher's environment: a pool size set there by hand is the operator's. */
  env: NodeJS.ProcessEnv;
}

/** Each process has two pools (read models, events); the background process gets at most half the budget. */
export function childSpecs(config: HcpConfig, { shared, connectionLimit, env }: ChildSpecsInput): ChildSpecs {
  const apiCount = Math.max(1, config.apiProcesses);
  const pools = poolSizes(config, apiCount, connectionLimit, Boolean(env.HCP_DB_POOL_SIZE?.trim()));
  return {
    background: {
      name: 'worker+projections',
      env: {
        ...shared,
        HCP_ROLES: 'worker,projections',
        HCP_DB_POOL_SIZE: String(pools.background),
        HCP_WORKER_CONCURRENCY: env.HCP_WORKER_CONCURRENCY?.trim() || BACKGROUND_WORKER_CONCURRENCY,
        // It serves no client: its health and metrics answer on a port of its own, picked at random.
        PORT: '0',
        HCP_INTERNAL_PORT: '',
      },
    },
    api: Array.from({ length: apiCount }, (_, i) => ({
      name: `api-${i + 1}`,
      env: {
        ...API_ENV,
        ...(env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX } : {}),
        ...shared,
        HCP_ROLES: 'api',
        HCP_DB_POOL_SIZE: String(pools.api),
        HCP_SEED_CATALOG: 'false',
      },
      nodeFlags: apiNodeFlags(config),
    })),
  };
}

function poolSizes(
  config: HcpConfig,
  apiCount: number,
  connectionLimit: number,
  setByHand: boolean,
): { api: number; background: number } {
  if (setByHand) return { api: config.dbPoolSize, background: config.dbPoolSize };
  const budget = Math.max(8, connectionLimit - CONNECTIONS_LEFT_TO_OTHERS);
  const background = Math.max(2, Math.min(BACKGROUND_POOL_SIZE, Math.floor(budget / 4)));
  const api = Math.max(2, Math.min(MAX_API_POOL_SIZE, Math.floor((budget - 2 * background) / (2 * apiCount))));
  return { api, background };
}

/**
 * How the API processes share the port. Several: round robin (node:cluster's default on Linux), the
 * launcher accepting each connection and handing it to the next process, since processes accepting for
 * themselves take turns unevenly. One: it accepts its own connections, and no connection costs a
 * message between processes (~15 % of an API process's CPU in a burst of 1,000 new connections).
 * NODE_CLUSTER_SCHED_POLICY, when set, is the operator's choice.
 */
export function schedulingPolicy(apiProcesses: number, env: NodeJS.ProcessEnv): number {
  const chosen = env.NODE_CLUSTER_SCHED_POLICY?.trim();
  if (chosen === 'rr') return cluster.SCHED_RR;
  if (chosen === 'none') return cluster.SCHED_NONE;
  return apiProcesses === 1 ? cluster.SCHED_NONE : cluster.SCHED_RR;
}
