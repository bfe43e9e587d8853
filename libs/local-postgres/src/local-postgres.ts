import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ensureTraversable, postgresBinDir, resolveRunAs } from './binaries';
import { CLUSTER_DIR, connectionString, Context, CREDENTIALS_FILE, DB_NAME, ensureDatabase } from './context';
import { initCluster, loadOrCreateCredentials } from './data-folder';
import { takeOverLeftover } from './leftover';
import { isValidPort, launchOnFreePort, portOfDataFolder } from './port';
import { launch, shutdown } from './server-process';
import { withStartLock } from './start-lock';
import { ServerSupervisor } from './supervisor';
import { defaultLogger, EmbeddedPostgresLogger, exists } from './support';

/**
 * A PostgreSQL kept inside an application's data folder, for local runs and tests: HCP starts one when
 * no DATABASE_URL is configured. The cluster, its password and its port live in the data folder; the
 * server runs in its own session, so a server left behind by a killed process is reused (or stopped)
 * by the next start on the same folder.
 */

export interface EmbeddedPostgresOptions {
  /** The data folder. The cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  /**
   * Loopback TCP port. Unset: the data folder's own port, chosen free on its first use and remembered
   * in `<dataDir>/postgres.port` (and replaced by another free one if something else has taken it).
   * A port given here is used as is, and not remembered.
   */
  port?: number;
  logger?: EmbeddedPostgresLogger;
  /**
   * Restart the server on the same cluster and port whenever it dies other than through stop() (with
   * capped backoff). For a long-running application; a one-off command leaves it off.
   */
  supervise?: boolean;
}

export interface EmbeddedPostgres {
  /** `postgres://hcp:<password>@127.0.0.1:<port>/hcp` */
  readonly connectionString: string;
  /** The loopback port the server listens on. */
  readonly port: number;
  /** Whether this start reused a server already running on the cluster (left by, or shared with, another process). */
  readonly reused: boolean;
  /** Times the supervisor restarted a server that died (always 0 without `supervise`). */
  readonly restarts: number;
  /**
   * Ends supervision, then a fast shutdown (open transactions are rolled back, committed data is
   * checkpointed). Idempotent.
   */
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const logger = options.logger ?? defaultLogger;
  if (process.platform !== 'linux' && process.platform !== 'darwin') {
    // Recognising a leftover server safely needs /proc or ps; without them we could kill a stranger.
    throw new Error(`the embedded PostgreSQL supports Linux and macOS, not ${process.platform}; set DATABASE_URL`);
  }
  if (options.port !== undefined && !isValidPort(options.port)) {
    throw new Error(`embedded PostgreSQL: invalid port ${options.port}`);
  }

  const binDir = postgresBinDir();

  await fs.mkdir(path.resolve(options.dataDir), { recursive: true, mode: 0o700 });
  // The real path, because the leftover check compares it with what the kernel reports as the server's cwd.
  const dataDir = await fs.realpath(options.dataDir);
  const pgdata = path.join(dataDir, CLUSTER_DIR);
  const runAs = await resolveRunAs(logger);
  if (runAs) await ensureTraversable(dataDir, runAs);

  const clusterExists = await exists(path.join(pgdata, 'PG_VERSION'));
  const credentials = await loadOrCreateCredentials(path.join(dataDir, CREDENTIALS_FILE), clusterExists, logger);
  const port = options.port ?? (await portOfDataFolder(dataDir, logger));
  const ctx: Context = { dataDir, pgdata, port, binDir, runAs, credentials, logger };

  if (!clusterExists) await initCluster(ctx);

  const { pid, reused } = await withStartLock(dataDir, async () => {
    const leftover = await takeOverLeftover(ctx);
    if (leftover !== undefined) return { pid: leftover, reused: true };
    return { pid: options.port === undefined ? await launchOnFreePort(ctx) : await launch(ctx), reused: false };
  });
  try {
    await ensureDatabase(ctx);
  } catch (error) {
    await shutdown(pid, ctx).catch(() => undefined);
    throw error;
  }

  const serverPid = pid;
  const supervisor = options.supervise ? new ServerSupervisor(ctx, pid) : undefined;
  let stopping: Promise<void> | undefined;
  return {
    connectionString: connectionString(ctx, DB_NAME),
    port: ctx.port,
    reused,
    get restarts() {
      return supervisor?.restarts ?? 0;
    },
    stop: () => (stopping ??= (async () => shutdown((await supervisor?.stop()) ?? serverPid, ctx))()),
  };
}
