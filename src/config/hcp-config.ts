import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { loadMessagingConfig, MESSAGING_CONFIG_VARIABLES, MessagingConfig } from '@hcp/messaging';
import { SECRETS_CONFIG_VARIABLES } from '@hcp/secrets';

/**
 * Every configuration variable of HCP, read in this one place and validated at start. A bad value stops
 * the process with a message naming the variable. `.env.example` lists the same table (a test keeps them
 * in step).
 */

export type HcpRole = 'api' | 'worker' | 'projections';
export type AuthMode = 'dev' | 'jwks';
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export interface HcpConfig {
  port: number;
  host: string;
  dataDir: string;
  /** Unset: HCP starts its own PostgreSQL inside `dataDir`. */
  databaseUrl: string | null;
  /** Unset: the embedded PostgreSQL picks a free loopback port once per data folder and keeps it there. */
  embeddedPostgresPort: number | undefined;
  /** Unset: events live in PostgreSQL beside the read models. */
  eventStoreConnectionString: string | null;
  roles: HcpRole[];
  /** API processes `npm start` runs when HCP_ROLES is not set; 0: one process with every role. */
  apiProcesses: number;
  /** V8's largest semi-space of each API process `npm start` runs, in MB (launcher/child-specs.ts). */
  apiSemiSpaceMb: number;
  /** Size of each of the process's two database pools. */
  dbPoolSize: number;
  logLevel: LogLevel;
  auth: {
    mode: AuthMode;
    issuer: string;
    audience: string;
    jwksFile: string | null;
    jwksUrl: string | null;
    jwksRefreshCooldownMs: number;
    clockSkewSeconds: number;
    devHs256Secret: string | null;
  };
  jobs: {
    leaseMs: number;
    maxAttempts: number;
    retryBackoffMs: number;
    attemptTimeoutMs: number;
    /** How long a job may take from being queued; recorded on the job when it is opened. */
    deadlineMs: number;
    workerConcurrency: number;
    pollMs: number;
  };
  simulator: {
    latencyScale: number;
    faults: string;
  };
  seedCatalog: boolean;
  rateLimit: { perActorPerMinute: number; perProjectPerMinute: number };
  /** How many refusals are written: the rest are counted (see src/http/rate-limit/refusal-budget.ts). */
  refusals: { recordedPerMinute: number; anonymousPerMinute: number };
  providerHealthIntervalMs: number;
  /** Changes (create, power, delete, tags) one process has running at once on one provider cluster. */
  providerCallsPerCluster: number;
  /** How often worker processes reconcile each cluster with its provider; 0: never on their own. */
  reconcileIntervalMs: number;
  /**
   * What HCP does with a provider resource that carries an HCP id but has no live VM: `report` lists it
   * for ops (`GET /v1/ops/orphans`), `destroy` also opens a destroy job for it when the next pass sees it again, settled.
   */
  orphanPolicy: 'report' | 'destroy';
  console: {
    /** How long a console token may wait for its (single) connection. */
    connectTimeoutMs: number;
    /** Longest a connected console stays open. */
    maxSessionMs: number;
    /** Public base URL of HCP as clients reach it (behind the gateway); null (dev mode only): from the request's Host. */
    publicUrl: string | null;
    /** Host names (lower case, any port) a request's Host or a websocket's Origin may name in dev mode. */
    allowedHosts: string[];
    /** Refused connections recorded per session and per client address per minute; the rest are counted. */
    refusalsRecordedPerMinute: number;
  };
  /** Kafka for audit and metering; no brokers means the log. */
  messaging: MessagingConfig;
  hosts: {
    /** Port of the internal router (host agents) alone; null: internal routes on `port` beside the API. */
    internalPort: number | null;
    /** A host is online while its last heartbeat is younger than this. */
    heartbeatTimeoutMs: number;
    /** Requests one host may make to the internal router per minute (per process). */
    perHostPerMinute: number;
    /** Enrollment attempts one client address may make per minute (per process). */
    enrollPerAddressPerMinute: number;
    /** `<cluster_id>/<identity>=sha256:<hex>` entries: hosts provisioned by other tools. */
    staticCredentials: string;
    /** How long an agent's claim on a host call lasts unless renewed (it renews at a third of it). */
    callLeaseMs: number;
    /** How often HCP looks for a host call's outcome, and for calls due to an agent, across processes. */
    callPollMs: number;
  };
  shutdown: {
    /** Longest a SIGTERM may take; past it the process logs what was still pending and exits non-zero. */
    graceMs: number;
    /** How long readiness says draining before the listener closes, for load balancers to notice. */
    drainDelayMs: number;
  };
}

interface VariableSpec {
  name: string;
  default: string;
  description: string;
}

const CORE_VARIABLES: readonly VariableSpec[] = [
  { name: 'PORT', default: '8080', description: 'HTTP port of the API' },
  {
    name: 'HOST',
    default: '',
    description:
      'address the API listens on; empty: 127.0.0.1 in dev auth mode (nothing but this machine reaches it), 0.0.0.0 in jwks mode',
  },
  { name: 'HCP_DATA_DIR', default: './.hcp', description: 'data folder: embedded PostgreSQL, dev signing key' },
  {
    name: 'DATABASE_URL',
    default: '',
    description: 'PostgreSQL URL; empty starts an embedded PostgreSQL in HCP_DATA_DIR',
  },
  {
    name: 'HCP_EMBEDDED_PG_PORT',
    default: '',
    description:
      'loopback port of the embedded PostgreSQL; empty picks a free one per data folder and remembers it there',
  },
  {
    name: 'EVENTSTORE_CONNECTION_STRING',
    default: '',
    description: 'EventStoreDB URL (esdb://...); empty keeps events in PostgreSQL',
  },
  {
    name: 'HCP_ROLES',
    default: 'api,worker,projections',
    description: 'what this process runs: api, worker, projections (comma-separated)',
  },
  {
    name: 'HCP_API_PROCESSES',
    default: '',
    description:
      '`npm start` without HCP_ROLES: API processes sharing PORT (one more runs the worker and projections); empty: one per core but one, at least one; 0: every role in one process',
  },
  {
    name: 'HCP_API_SEMI_SPACE_MB',
    default: '8',
    description:
      "`npm start` without HCP_ROLES: V8's largest semi-space (half the young generation) of each API process, in MB: 1, 2, 4, 8, 16, 32 or 64 (V8 rounds any other size up to the next of these); more trades memory for write throughput (8: ~140 MB peak RSS under reads at 100,000 VMs; 16: ~155 MB, with more creates/s; bench/README.md)",
  },
  {
    name: 'HCP_DB_POOL_SIZE',
    default: '20',
    description: 'connections of each of the two database pools of one process (read models, events)',
  },
  { name: 'LOG_LEVEL', default: 'info', description: 'trace, debug, info, warn, error or fatal' },
  {
    name: 'HCP_AUTH_MODE',
    default: 'dev',
    description: 'dev (signing key created in HCP_DATA_DIR, `npm run token`) or jwks',
  },
  { name: 'HCP_JWT_ISSUER', default: 'hcp-dev', description: 'required `iss` of tokens' },
  { name: 'HCP_JWT_AUDIENCE', default: 'hcp', description: 'required `aud` of tokens' },
  { name: 'HCP_JWKS_FILE', default: '', description: "JWKS file with the gateway's public keys (HCP_AUTH_MODE=jwks)" },
  {
    name: 'HCP_JWKS_URL',
    default: '',
    description: 'JWKS URL of the gateway (HCP_AUTH_MODE=jwks); cached, refetched on an unknown kid',
  },
  { name: 'HCP_JWKS_REFRESH_COOLDOWN_MS', default: '30000', description: 'least time between two JWKS refetches' },
  {
    name: 'HCP_JWT_DEV_HS256_SECRET',
    default: '',
    description: 'dev mode only: also accept HS256 tokens signed with this secret',
  },
  { name: 'HCP_JWT_CLOCK_SKEW_SECONDS', default: '30', description: 'tolerated clock skew for exp and nbf' },
  {
    name: 'HCP_JOB_LEASE_MS',
    default: '30000',
    description: 'job lease length; renewed at a third of it while the driver call runs',
  },
  {
    name: 'HCP_JOB_MAX_ATTEMPTS',
    default: '5',
    description: 'attempts of a job (errors and expired leases) before it fails',
  },
  { name: 'HCP_JOB_RETRY_BACKOFF_MS', default: '2000', description: 'first retry delay, doubled per attempt' },
  { name: 'HCP_JOB_ATTEMPT_TIMEOUT_MS', default: '600000', description: 'deadline of one driver call' },
  {
    name: 'HCP_JOB_DEADLINE_MS',
    default: '1800000',
    description:
      'how long a job may take from being queued (recorded on the job); past it the job fails with PROVIDER_TIMEOUT',
  },
  {
    name: 'HCP_WORKER_CONCURRENCY',
    default: '16',
    description:
      "jobs one worker process runs at once (npm start's worker+projections process: 128 unless set); what reaches a provider is bounded by HCP_PROVIDER_CALLS_PER_CLUSTER",
  },
  { name: 'HCP_WORKER_POLL_MS', default: '250', description: 'how often an idle worker looks for due jobs' },
  {
    name: 'HCP_SIMULATOR_LATENCY_SCALE',
    default: '1',
    description: "multiplier of the simulator's step latencies (0 = instant)",
  },
  {
    name: 'HCP_SIMULATOR_FAULTS',
    default: '',
    description: 'simulator fault injection, e.g. create=fail,stop=timeout,reboot=fail@0.3',
  },
  {
    name: 'HCP_RATE_LIMIT_ACTOR_PER_MINUTE',
    default: '1200',
    description: 'requests one actor may make per minute (per API process)',
  },
  {
    name: 'HCP_RATE_LIMIT_PROJECT_PER_MINUTE',
    default: '3000',
    description: 'requests to one project per minute, all actors together (per API process)',
  },
  {
    name: 'HCP_REFUSALS_RECORDED_PER_MINUTE',
    default: '30',
    description:
      'refused requests recorded one by one per client address and per actor per minute (per API process); further ones are counted into one RequestRefusalsSuppressed event per minute',
  },
  {
    name: 'HCP_REFUSALS_ANONYMOUS_PER_MINUTE',
    default: '600',
    description:
      'refused anonymous requests one client address may make per minute (per API process) before HCP answers 429 RATE_LIMITED without recording them',
  },
  {
    name: 'HCP_CONSOLE_REFUSALS_RECORDED_PER_MINUTE',
    default: '10',
    description:
      'refused console connections recorded per session and per client address per minute (per process); further ones are only counted in hcp_refusals_total',
  },
  {
    name: 'HCP_PROVIDER_HEALTH_INTERVAL_MS',
    default: '60000',
    description: "how often worker processes check every provider's connectivity",
  },
  {
    name: 'HCP_PROVIDER_CALLS_PER_CLUSTER',
    default: '16',
    description:
      'changes (create, power, delete, tags) one process runs at once on one provider cluster; further jobs wait for a free one',
  },
  {
    name: 'HCP_CONSOLE_CONNECT_TIMEOUT_S',
    default: '60',
    description: 'how long a console session token stays valid for its one connection',
  },
  {
    name: 'HCP_CONSOLE_MAX_SESSION_S',
    default: '14400',
    description: 'longest a connected console stays open before HCP closes it',
  },
  {
    name: 'HCP_PUBLIC_URL',
    default: '',
    description:
      'base URL clients reach HCP at (console URLs, websocket Origin); required in jwks mode; empty (dev mode only): the request Host, if on HCP_ALLOWED_HOSTS',
  },
  {
    name: 'HCP_ALLOWED_HOSTS',
    default: 'localhost,127.0.0.1,[::1]',
    description:
      'dev mode: host names (any port, comma-separated) a request Host may name for console URLs, and a console websocket Origin may come from',
  },
  {
    name: 'HCP_RECONCILE_INTERVAL_MS',
    default: '60000',
    description:
      "how often worker processes compare each cluster's VMs with what its provider reports and record the drift (one process per cluster at a time); 0: only on demand (POST /v1/ops/vms/{id}/reconcile)",
  },
  {
    name: 'HCP_ORPHAN_POLICY',
    default: 'report',
    description:
      'report: list provider resources carrying an HCP id without a live VM for ops to adopt or destroy; destroy: also destroy each one when the next pass sees it again, settled (audited as hcp-orphans)',
  },
  {
    name: 'HCP_INTERNAL_PORT',
    default: '',
    description:
      'port of the internal router (/internal/v1, host agents) alone: public routes never answer there, internal ones only there; empty: both on PORT',
  },
  {
    name: 'HCP_HOST_HEARTBEAT_TIMEOUT_MS',
    default: '30000',
    description: 'a host is online while its last heartbeat is younger than this',
  },
  {
    name: 'HCP_RATE_LIMIT_HOST_PER_MINUTE',
    default: '1200',
    description: 'requests one host may make to the internal router per minute (per API process)',
  },
  {
    name: 'HCP_RATE_LIMIT_ENROLL_PER_MINUTE',
    default: '30',
    description:
      'enrollment attempts (POST /internal/v1/enroll) one client address may make per minute (per API process)',
  },
  {
    name: 'HCP_STATIC_HOST_CREDENTIALS',
    default: '',
    description:
      'hosts provisioned by other tools, comma-separated <cluster_id>/<identity>=sha256:<hex SHA-256 of the credential> (digests, never credentials); such a host appears on its first heartbeat, can be revoked, not rotated',
  },
  {
    name: 'HCP_HOST_CALL_LEASE_MS',
    default: '30000',
    description:
      "how long a host agent's claim on a driver call lasts unless renewed; a call of an agent that died is claimed again after it",
  },
  {
    name: 'HCP_HOST_CALL_POLL_MS',
    default: '250',
    description: 'how often HCP looks for host calls due to an agent and for their outcomes across processes',
  },
  { name: 'HCP_SEED_CATALOG', default: 'true', description: 'seed the local zone, images and flavors on start' },
  {
    name: 'HCP_SHUTDOWN_GRACE_MS',
    default: '25000',
    description:
      'longest a graceful stop (SIGTERM, SIGINT) may take; past it HCP logs what was still pending and exits non-zero',
  },
  {
    name: 'HCP_SHUTDOWN_DRAIN_DELAY_MS',
    default: '0',
    description: 'on SIGTERM, how long readiness answers draining (and new requests 503) before the listener closes',
  },
];

/**
 * Every variable HCP reads. The secrets and messaging variables are parsed by their libraries (secrets
 * at start through `loadSecretsFromEnv`, messaging here), but listed, documented and checked with the rest.
 */
export const CONFIG_VARIABLES: readonly VariableSpec[] = [
  ...CORE_VARIABLES,
  ...SECRETS_CONFIG_VARIABLES,
  ...MESSAGING_CONFIG_VARIABLES,
];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const ROLES: readonly HcpRole[] = ['api', 'worker', 'projections'];
const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
/**
 * The semi-space sizes V8 keeps as given: it rounds `--max-semi-space-size` up to a power of two, so 12
 * would run as 16 (bench/README.md, the twenty-fifth session).
 */
const SEMI_SPACE_SIZES_MB = ['1', '2', '4', '8', '16', '32', '64'] as const;

/** Whether a line at `level` is written when LOG_LEVEL is `configured` (pino's order: trace lowest). */
export function logLevelEnabled(configured: LogLevel, level: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(configured);
}

/**
 * API processes when HCP_API_PROCESSES is empty: a core each, but one, which the worker and projections'
 * process needs under load (and PostgreSQL beside it). On two cores that is one API process, and it
 * measured better than two everywhere (bench/README.md, thirteenth session): the processes were
 * contending for the cores, and one process accepts its own connections instead of being handed each.
 */
export function defaultApiProcesses(cores: number): number {
  return Math.max(1, cores - 1);
}

/**
 * Reads and validates the environment. `extraCheck` lets callers validate values owned by other modules
 * (the simulator's fault syntax) without this file knowing their grammar.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  extraChecks: Array<(c: HcpConfig) => string | null> = [],
): HcpConfig {
  const problems: string[] = [];
  const raw = (name: string): string => {
    const spec = CONFIG_VARIABLES.find((v) => v.name === name);
    if (!spec) throw new Error(`unknown configuration variable ${name}`);
    const value = env[name];
    return value === undefined || value === '' ? spec.default : value.trim();
  };
  const int = (name: string, min: number, max: number): number => {
    const text = raw(name);
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max) {
      problems.push(`${name}=${JSON.stringify(text)}: expected an integer from ${min} to ${max}`);
      return min;
    }
    return value;
  };
  const num = (name: string, min: number, max: number): number => {
    const text = raw(name);
    const value = Number(text);
    if (text === '' || !Number.isFinite(value) || value < min || value > max) {
      problems.push(`${name}=${JSON.stringify(text)}: expected a number from ${min} to ${max}`);
      return min;
    }
    return value;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[]): T => {
    const value = raw(name) as T;
    if (!allowed.includes(value))
      problems.push(`${name}=${JSON.stringify(value)}: expected one of ${allowed.join(', ')}`);
    return value;
  };
  const bool = (name: string): boolean => {
    const value = raw(name).toLowerCase();
    if (!['true', 'false', '1', '0'].includes(value))
      problems.push(`${name}=${JSON.stringify(value)}: expected true or false`);
    return value === 'true' || value === '1';
  };
  const url = (name: string, protocols: string[]): string | null => {
    const value = raw(name);
    if (!value) return null;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
    } catch {
      problems.push(`${name}: expected a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`);
    }
    return value;
  };

  const hostList = (name: string): string[] => {
    const hosts = raw(name)
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean);
    const bad = hosts.filter((h) => !/^(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)$/.test(h));
    if (bad.length)
      problems.push(`${name}: ${bad.map((h) => JSON.stringify(h)).join(', ')} not host names (no ports, no schemes)`);
    return hosts;
  };

  const roles = raw('HCP_ROLES')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean) as HcpRole[];
  const badRoles = roles.filter((r) => !ROLES.includes(r));
  if (roles.length === 0 || badRoles.length > 0) {
    problems.push(
      `HCP_ROLES=${JSON.stringify(raw('HCP_ROLES'))}: expected a comma-separated subset of ${ROLES.join(', ')}`,
    );
  }

  const config: HcpConfig = {
    port: int('PORT', 0, 65535),
    // Dev mode trusts whoever holds a dev token: only this machine may reach it unless HOST says otherwise.
    host: raw('HOST') || (raw('HCP_AUTH_MODE') === 'dev' ? '127.0.0.1' : '0.0.0.0'),
    dataDir: path.resolve(raw('HCP_DATA_DIR')),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    embeddedPostgresPort: raw('HCP_EMBEDDED_PG_PORT') === '' ? undefined : int('HCP_EMBEDDED_PG_PORT', 1024, 65535),
    eventStoreConnectionString: url('EVENTSTORE_CONNECTION_STRING', ['esdb:', 'esdb+discover:']),
    roles: [...new Set(roles)],
    apiProcesses:
      raw('HCP_API_PROCESSES') === '' ? defaultApiProcesses(availableParallelism()) : int('HCP_API_PROCESSES', 0, 256),
    apiSemiSpaceMb: Number(oneOf('HCP_API_SEMI_SPACE_MB', SEMI_SPACE_SIZES_MB)),
    dbPoolSize: int('HCP_DB_POOL_SIZE', 1, 200),
    logLevel: oneOf('LOG_LEVEL', LOG_LEVELS),
    auth: {
      mode: oneOf<AuthMode>('HCP_AUTH_MODE', ['dev', 'jwks']),
      issuer: raw('HCP_JWT_ISSUER'),
      audience: raw('HCP_JWT_AUDIENCE'),
      jwksFile: raw('HCP_JWKS_FILE') || null,
      jwksUrl: url('HCP_JWKS_URL', ['https:', 'http:']),
      jwksRefreshCooldownMs: int('HCP_JWKS_REFRESH_COOLDOWN_MS', 1000, 3_600_000),
      clockSkewSeconds: int('HCP_JWT_CLOCK_SKEW_SECONDS', 0, 300),
      devHs256Secret: raw('HCP_JWT_DEV_HS256_SECRET') || null,
    },
    jobs: {
      leaseMs: int('HCP_JOB_LEASE_MS', 1000, 3_600_000),
      maxAttempts: int('HCP_JOB_MAX_ATTEMPTS', 1, 100),
      retryBackoffMs: int('HCP_JOB_RETRY_BACKOFF_MS', 0, 3_600_000),
      attemptTimeoutMs: int('HCP_JOB_ATTEMPT_TIMEOUT_MS', 1000, 86_400_000),
      deadlineMs: int('HCP_JOB_DEADLINE_MS', 1000, 7 * 86_400_000),
      workerConcurrency: int('HCP_WORKER_CONCURRENCY', 1, 1000),
      pollMs: int('HCP_WORKER_POLL_MS', 10, 60_000),
    },
    simulator: {
      latencyScale: num('HCP_SIMULATOR_LATENCY_SCALE', 0, 100),
      faults: raw('HCP_SIMULATOR_FAULTS'),
    },
    seedCatalog: bool('HCP_SEED_CATALOG'),
    providerHealthIntervalMs: int('HCP_PROVIDER_HEALTH_INTERVAL_MS', 1000, 86_400_000),
    providerCallsPerCluster: int('HCP_PROVIDER_CALLS_PER_CLUSTER', 1, 1000),
    reconcileIntervalMs: int('HCP_RECONCILE_INTERVAL_MS', 0, 86_400_000),
    orphanPolicy: oneOf<'report' | 'destroy'>('HCP_ORPHAN_POLICY', ['report', 'destroy']),
    console: {
      connectTimeoutMs: int('HCP_CONSOLE_CONNECT_TIMEOUT_S', 1, 3600) * 1000,
      maxSessionMs: int('HCP_CONSOLE_MAX_SESSION_S', 10, 7 * 86_400) * 1000,
      publicUrl: url('HCP_PUBLIC_URL', ['https:', 'http:'])?.replace(/\/+$/, '') ?? null,
      allowedHosts: hostList('HCP_ALLOWED_HOSTS'),
      refusalsRecordedPerMinute: int('HCP_CONSOLE_REFUSALS_RECORDED_PER_MINUTE', 0, 1_000_000),
    },
    messaging: (() => {
      try {
        return loadMessagingConfig(env);
      } catch (err) {
        problems.push((err as Error).message);
        return loadMessagingConfig({});
      }
    })(),
    rateLimit: {
      perActorPerMinute: int('HCP_RATE_LIMIT_ACTOR_PER_MINUTE', 1, 10_000_000),
      perProjectPerMinute: int('HCP_RATE_LIMIT_PROJECT_PER_MINUTE', 1, 10_000_000),
    },
    refusals: {
      recordedPerMinute: int('HCP_REFUSALS_RECORDED_PER_MINUTE', 0, 1_000_000),
      anonymousPerMinute: int('HCP_REFUSALS_ANONYMOUS_PER_MINUTE', 1, 10_000_000),
    },
    hosts: {
      internalPort: raw('HCP_INTERNAL_PORT') === '' ? null : int('HCP_INTERNAL_PORT', 1, 65535),
      heartbeatTimeoutMs: int('HCP_HOST_HEARTBEAT_TIMEOUT_MS', 1000, 3_600_000),
      perHostPerMinute: int('HCP_RATE_LIMIT_HOST_PER_MINUTE', 1, 10_000_000),
      enrollPerAddressPerMinute: int('HCP_RATE_LIMIT_ENROLL_PER_MINUTE', 1, 10_000_000),
      staticCredentials: raw('HCP_STATIC_HOST_CREDENTIALS'),
      callLeaseMs: int('HCP_HOST_CALL_LEASE_MS', 1000, 600_000),
      callPollMs: int('HCP_HOST_CALL_POLL_MS', 10, 10_000),
    },
    shutdown: {
      graceMs: int('HCP_SHUTDOWN_GRACE_MS', 1000, 3_600_000),
      drainDelayMs: int('HCP_SHUTDOWN_DRAIN_DELAY_MS', 0, 3_600_000),
    },
  };
  if (config.auth.mode === 'jwks' && !config.auth.jwksFile === !config.auth.jwksUrl)
    problems.push('HCP_AUTH_MODE=jwks needs exactly one of HCP_JWKS_FILE and HCP_JWKS_URL');
  // Behind the gateway the Host header is the client's to choose: URLs handed out must not come from it.
  if (config.auth.mode === 'jwks' && !config.console.publicUrl)
    problems.push('HCP_AUTH_MODE=jwks needs HCP_PUBLIC_URL (the base URL clients reach HCP at)');
  // The grace period counts from the signal: a drain delay as long would leave no time to stop in order.
  if (config.shutdown.drainDelayMs >= config.shutdown.graceMs)
    problems.push('HCP_SHUTDOWN_DRAIN_DELAY_MS must be shorter than HCP_SHUTDOWN_GRACE_MS');
  if (config.auth.devHs256Secret && config.auth.mode !== 'dev')
    problems.push('HCP_JWT_DEV_HS256_SECRET is only accepted with HCP_AUTH_MODE=dev');
  if (config.auth.devHs256Secret && config.auth.devHs256Secret.length < 32)
    problems.push('HCP_JWT_DEV_HS256_SECRET must be at least 32 characters');
  if (config.hosts.internalPort !== null && config.hosts.internalPort === config.port)
    problems.push('HCP_INTERNAL_PORT must differ from PORT (leave it empty to serve internal routes on PORT)');
  for (const check of extraChecks) {
    const problem = check(config);
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
