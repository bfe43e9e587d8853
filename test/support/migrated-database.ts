import { DataSource } from 'typeorm';
import { createDataSource } from '../../src/platform/persistence/data-source';
import { migrate } from '../../src/platform/persistence/migrate';
import { createTestDatabase, TestDatabase } from './test-database';

export interface MigratedDatabase {
  db: TestDatabase;
  /** HCP's TypeORM data source on it, every migration applied. */
  ds: DataSource;
  close(): Promise<void>;
}

/** A database of its own with HCP's schema, for integration tests of stores and projections. */
export async function migratedTestDatabase(prefix: string, poolSize = 2): Promise<MigratedDatabase> {
  const db = await createTestDatabase(prefix);
  const ds = createDataSource(db.url, { poolSize });
  await ds.initialize();
  await migrate(ds);
  return {
    db,
    ds,
    close: async () => {
      await ds.destroy();
      await db.drop();
    },
  };
}
