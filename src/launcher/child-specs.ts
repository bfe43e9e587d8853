import { HcpConfig } from '../config/hcp-config';
import { ChildSpec } from './process-supervisor';

/**
 * Connections the children of one embedded PostgreSQL may open in all (its max_connections is 100;
 * the rest is for `npm run hcp` and psql). Each process has two pools (read models, events).
 */
const EMBEDDED_CONNECTION_BUDGET = 90;
const BACKGROUND_POOL_SIZE = 15;

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
        // It serves no client: its health and metrics answer on a port of its own, picked at random.
        PORT: '0',
        HCP_INTERNAL_PORT: '',
      },
    },
    api: Array.from({ length: apiCount }, (_, i) => ({
      name: `api-${i + 1}`,
      env: { ...shared, HCP_ROLES: 'api', HCP_DB_POOL_SIZE: String(apiPool), HCP_SEED_CATALOG: 'false' },
    })),
  };
}
