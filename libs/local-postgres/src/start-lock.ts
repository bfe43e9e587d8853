import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';

/** Inside the data folder, beside the cluster, so it is shared by every process using the folder. */
const START_LOCK_FILE = 'postgres.start.lock';
/** A holder refreshes the lock this often; one that stopped refreshing this long ago is dead. */
const REFRESH_MS = 2_000;
const STALE_MS = 15_000;
/** Longer than a launch may take (crash recovery included), so a waiter outlasts a slow holder. */
const WAIT_MS = 300_000;

/**
 * Runs `work` (take over a leftover server or launch one) while no other process on this data folder
 * does the same. Two HCPs sharing a folder otherwise race when its server dies: each sees the stale
 * postmaster.pid, one removes it just after the other's new server wrote its own, and that server,
 * finding its lock file gone, shuts itself down. The lock is a directory refreshed while held, so a
 * holder killed mid-launch frees it once it goes stale.
 */
export async function withStartLock<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  const release = await lockfile.lock(dataDir, {
    lockfilePath: path.join(dataDir, START_LOCK_FILE),
    stale: STALE_MS,
    update: REFRESH_MS,
    realpath: false,
    retries: { retries: Math.ceil(WAIT_MS / 500), factor: 1, minTimeout: 250, maxTimeout: 500 },
    // A lock lost (its refresh failed for longer than STALE_MS) is reported by release(); the launch
    // it guarded has finished or failed on its own terms by then.
    onCompromised: () => undefined,
  });
  try {
    return await work();
  } finally {
    await release().catch(() => undefined);
  }
}
