import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Context, newClient } from './context';
import { identify, processesInside, readPidFile } from './process-identity';
import { shutdown } from './server-process';
import { sleep } from './support';

/** Backends notice a dead postmaster and exit on their own, within moments. */
const ORPHAN_WAIT_MS = 10_000;

/**
 * A server left behind by an HCP that was killed (the server runs in its own session and outlives it).
 *
 * Looks at postmaster.pid. Returns the pid of a server of ours that can be reused as is (ready, on
 * `ctx.port`, answering for this cluster); otherwise makes sure no server of ours runs and no stale pid
 * file blocks a new one, and returns undefined.
 */
export async function takeOverLeftover(ctx: Context): Promise<number | undefined> {
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
  ctx.logger.warn(
    `embedded PostgreSQL: removing the stale ${path.join(ctx.pgdata, 'postmaster.pid')} (pid ${info.pid ?? '?'} is no server of this cluster)`,
  );
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
      throw new Error(
        `processes ${pids.join(', ')} still run inside ${pgdata} although its postmaster is gone; stop them before starting HCP`,
      );
    }
    await sleep(100);
  }
}
