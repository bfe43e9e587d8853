import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { childEnv } from './binaries';
import { Context, STARTUP_LOG_FILE } from './context';
import { identify, readPidFile } from './process-identity';
import { errorCode, errorText, POLL_MS, sleep } from './support';

/** Crash recovery after a kill replays WAL before the server reports ready; give it room. */
const READY_TIMEOUT_MS = 120_000;
/** A fast shutdown ends with a checkpoint, which can take a while with many dirty buffers. */
const FAST_SHUTDOWN_TIMEOUT_MS = 60_000;
const IMMEDIATE_SHUTDOWN_TIMEOUT_MS = 15_000;

/** Starts postgres on `ctx.port` and resolves with its pid once it accepts connections. */
export async function launch(ctx: Context): Promise<number> {
  const logFile = path.join(ctx.dataDir, STARTUP_LOG_FILE);
  // Only what postgres prints before its logging collector takes over lands here (bind errors, bad
  // settings); a file rather than a pipe, because a pipe breaks when HCP dies and the server lives on.
  const out = await fs.open(logFile, 'w', 0o600);
  let child: ReturnType<typeof spawn>;
  // Recorded rather than thrown: an exec failure (missing or non-executable binary) arrives as an event,
  // possibly before we look, and an 'error' event without a listener would crash the process.
  let spawnError: unknown;
  try {
    child = spawn(
      path.join(ctx.binDir, 'postgres'),
      [
        '-D',
        ctx.pgdata,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `port=${ctx.port}`,
        // TCP on loopback only: no socket files in /tmp to collide with other servers or go stale.
        '-c',
        'unix_socket_directories=',
        // A week of daily files inside the cluster, overwritten in turn, so a long-lived HCP never fills the disk.
        '-c',
        'logging_collector=on',
        '-c',
        'log_directory=log',
        '-c',
        'log_filename=postgresql-%a.log',
        '-c',
        'log_truncate_on_rotation=on',
        '-c',
        'log_rotation_age=1d',
        '-c',
        'log_rotation_size=0',
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
      throw new Error(
        `embedded PostgreSQL was not ready after ${READY_TIMEOUT_MS} ms; see ${logFile} and ${path.join(ctx.pgdata, 'log')}`,
      );
    }
    await sleep(POLL_MS);
  }
  ctx.logger.log(
    `embedded PostgreSQL: listening on 127.0.0.1:${ctx.port} (pid ${pid}, logs in ${path.join(ctx.pgdata, 'log')})`,
  );
  return pid;
}

/**
 * Sends a fast shutdown and waits for the server to be gone; escalates to an immediate shutdown (crash
 * recovery on the next start, no data loss) rather than hang HCP's exit forever.
 */
export async function shutdown(pid: number, ctx: Context): Promise<void> {
  const steps: Array<[NodeJS.Signals, number]> = [
    ['SIGINT', FAST_SHUTDOWN_TIMEOUT_MS],
    ['SIGQUIT', IMMEDIATE_SHUTDOWN_TIMEOUT_MS],
  ];
  for (const [signal, timeoutMs] of steps) {
    // Checked before every signal: the pid may by now belong to someone else.
    if ((await identify(pid, ctx.pgdata)) !== 'ours') return;
    if (signal === 'SIGQUIT')
      ctx.logger.warn(
        `embedded PostgreSQL (pid ${pid}) ignored a fast shutdown for ${FAST_SHUTDOWN_TIMEOUT_MS} ms; sending an immediate shutdown`,
      );
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

/**
 * The logging collector starts before the server binds its port, so most startup failures (port taken,
 * bad setting) are in the newest file of `<pgdata>/log`, not in the startup log.
 */
async function serverLogTail(pgdata: string, startupLog: string, maxChars = 1500): Promise<string> {
  const logDir = path.join(pgdata, 'log');
  const files = await fs.readdir(logDir).catch(() => [] as string[]);
  const dated = await Promise.all(
    files.map(async (name) => ({
      file: path.join(logDir, name),
      mtime: (await fs.stat(path.join(logDir, name))).mtimeMs,
    })),
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
