import { DataSource } from 'typeorm';

/**
 * Brings the schema to this release's version. Several HCP processes may start at once: an advisory
 * lock lets one migrate while the others wait, then find nothing left to do.
 */
export async function migrate(dataSource: DataSource): Promise<void> {
  const lock = dataSource.createQueryRunner();
  await lock.connect();
  try {
    await lock.query(`SELECT pg_advisory_lock(hashtext('hcp-migrations'))`);
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await lock.query(`SELECT pg_advisory_unlock(hashtext('hcp-migrations'))`).catch(() => undefined);
    await lock.release();
  }
}
