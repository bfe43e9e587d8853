import { HcpConfig } from '../config/hcp-config';
import { ChildSpec } from './process-supervisor';

/**
 * Connections the children of one embedded PostgreSQL may open in all (its max_connections is 100;
 * the rest is for `npm run admin` and psql). Each process has two pools (read models, events).
 */
const EMBEDDED_CONNECTION_BUDGET = 90;
const BACKGROUND_POOL_SIZE = 20;

/**
 * Jobs the worker process runs at once unless HCP_WORKER_CONCURRENCY says otherwise: it no longer shares
 * its event loop with the API, and drivers run the calls of one VM one after another themselves.
 */
const BACKGROUND_WORKER_CONCURRENCY = '32';

/**
 * V8 flags of an API process. An API request allocates little that outlives it, so a small young
 * generation (4 MB semi-spaces instead of V8's 16) is collected often and cheaply instead of holding
 * pages: peak RSS of an API process under 10 s of reads at 100,000 VMs went 178-197 MB -> 139-169 MB
 * (bench, 2026-12-03).
 */
export const API_NODE_FLAGS = ['--max-semi-space-size=4'];

export interface ChildSpecs {
  /** The job worker and the projections, in one process: it also seeds the catalog. */
  background: ChildSpec;
  api: ChildSpec[];
}

export function childSpecs(config: HcpConfig, shared: Record<string, string>): ChildSpecs {
  const apiCount = Math.max(1, config.apiProcesses);
  // Set by hand, the pool size is the operator's; on the embedded database the children share its limit.
  const poolSet = Boolean(process.env.HCP_DB_POOL_SIZE?.trim());
  const embedded = !config.databaseUrl;
  const apiPool =
    poolSet || !embedded
      ? config.dbPoolSize
      : Math.max(2, Math.min(20, Math.floor((EMBEDDED_CONNECTION_BUDGET - 2 * BACKGROUND_POOL_SIZE) / (2 * apiCount))));
  const backgroundPool = poolSet || !embedded ? config.dbPoolSize : BACKGROUND_POOL_SIZE;
  return {
    background: {
      name: 'worker+projections',
      env: {
        ...shared,
        HCP_ROLES: 'worker,projections',
        HCP_DB_POOL_SIZE: String(backgroundPool),
        HCP_WORKER_CONCURRENCY: process.env.HCP_WORKER_CONCURRENCY?.trim() || BACKGROUND_WORKER_CONCURRENCY,
        // It serves no client: its health and metrics answer on a port of its own, picked at random.
        PORT: '0',
        HCP_INTERNAL_PORT: '',
      },
    },
    api: Array.from({ length: apiCount }, (_, i) => ({
      name: `api-${i + 1}`,
      env: { ...shared, HCP_ROLES: 'api', HCP_DB_POOL_SIZE: String(apiPool), HCP_SEED_CATALOG: 'false' },
      nodeFlags: API_NODE_FLAGS,
    })),
  };
}
