import { DataSource } from 'typeorm';
import { analyzeTablesWithoutStatistics } from './table-statistics';

export interface MigrationOutcome {
  /** Tables that held rows without planner statistics (a restore, `pg_upgrade`), analyzed before serving. */
  analyzedTables: string[];
}

/**
 * Brings the schema to this release's version and gives the planner statistics wherever a restore left
 * none. Several HCP processes may start at once: an advisory lock lets one do it while the others wait,
 * then find nothing left to do.
 */
export async function migrate(dataSource: DataSource): Promise<MigrationOutcome> {
  return withMigrationLock(dataSource, async () => {
    await dataSource.runMigrations({ transaction: 'each' });
    return { analyzedTables: await analyzeTablesWithoutStatistics(dataSource) };
  });
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

/** Says at start which tables a restore had left without statistics, so an operator sees why it was slower. */
export function logAnalyzedTables(outcome: MigrationOutcome, logger: { log(message: string): void }): void {
  if (outcome.analyzedTables.length === 0) return;
  logger.log(`analyzed ${outcome.analyzedTables.join(', ')}: they held rows without planner statistics`);
}
