import { DataSource } from 'typeorm';

/**
 * Brings the schema to this release's version. Several HCP processes may start at once: an advisory
 * lock lets one migrate while the others wait, then find nothing left to do.
 */
export async function migrate(dataSource: DataSource): Promise<void> {
  await withMigrationLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
}

/**
 * Runs `work` holding the lock every schema change takes (HCP's start and `npm run admin -- migrate`), on a
 * connection of its own so the lock outlives the transactions `work` opens and closes.
 */
export async function withMigrationLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  const lock = dataSource.createQueryRunner();
  await lock.connect();
  try {
    await lock.query(`SELECT pg_advisory_lock(hashtext('hcp-migrations'))`);
    return await work();
  } finally {
    await lock.query(`SELECT pg_advisory_unlock(hashtext('hcp-migrations'))`).catch(() => undefined);
    await lock.release();
  }
}
