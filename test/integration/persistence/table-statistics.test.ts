import { createDataSource } from '../../../src/platform/persistence/data-source';
import { migrate } from '../../../src/platform/persistence/migrate';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';
import { createTestDatabase } from '../../support/test-database';
import { plansScanningWholeTable } from '../../support/query-plans';

/**
 * A restore or `pg_upgrade` leaves tables full of rows and without planner statistics; HCP's start gives
 * them statistics before serving, under the migration lock.
 */
describe('table statistics at start', () => {
  let database: MigratedDatabase;

  beforeEach(async () => {
    database = await migratedTestDatabase('hcp_table_statistics', 4);
  });

  afterEach(async () => {
    await database?.close();
  });

  const statisticsOf = async (table: string) => {
    const [row] = await database.ds.query(`SELECT count(*)::int AS n FROM pg_stats WHERE tablename = $1`, [table]);
    return row.n as number;
  };

  it('on a new database analyzes nothing, at the first start or the next: its tables are empty or small', async () => {
    const db = await createTestDatabase('hcp_table_statistics_new');
    const ds = createDataSource(db.url, { poolSize: 2 });
    await ds.initialize();
    try {
      expect(await migrate(ds)).toEqual({ analyzedTables: [] });
      expect(await migrate(ds)).toEqual({ analyzedTables: [] });
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });

  it('analyzes a table a restore left with rows and no statistics, once, and its batch lookup then uses the key', async () => {
    const { ds } = database;
    // Autovacuum would analyze the table at a moment of its choosing; the restore it stands in for is the
    // moment before it does.
    await ds.query(`ALTER TABLE quota_vm_projects SET (autovacuum_enabled = false)`);
    await ds.query(
      `INSERT INTO quota_vm_projects (vm_id, project_id, ended_at)
       SELECT 'vm-' || i, 'p-' || (i % 100), CASE WHEN i % 2 = 0 THEN now() END FROM generate_series(1, 50000) i`,
    );
    // The quota-release projection's read of the ended VMs a batch names.
    const lookup = {
      text: `SELECT vm_id, project_id FROM quota_vm_projects WHERE vm_id = ANY($1::text[]) AND ended_at IS NOT NULL`,
      values: [Array.from({ length: 200 }, (_, i) => `vm-${i * 250 + 1}`)],
    };
    const runner = ds.createQueryRunner();
    await runner.connect();
    const run = (sql: string) => runner.query(sql);
    try {
      expect(await statisticsOf('quota_vm_projects')).toBe(0);
      expect(await plansScanningWholeTable(run, lookup, 'quota_vm_projects')).not.toEqual([]);

      expect(await migrate(ds)).toEqual({ analyzedTables: ['public.quota_vm_projects'] });
      expect(await statisticsOf('quota_vm_projects')).toBeGreaterThan(0);
      expect(await plansScanningWholeTable(run, lookup, 'quota_vm_projects')).toEqual([]);

      expect(await migrate(ds)).toEqual({ analyzedTables: [] });
    } finally {
      await runner.release();
    }
  });

  it('leaves a table of a few rows without statistics, so a plan made while it is small reads by the key', async () => {
    const { ds } = database;
    await ds.query(`ALTER TABLE hcp_events SET (autovacuum_enabled = false)`);
    // The catalog the embedded default seeds before its API processes start (and analyze at start).
    await ds.query(
      `INSERT INTO hcp_events (stream_id, revision, event_id, type, data)
       SELECT 'zone-' || i, 0, gen_random_uuid(), 'ZoneRegistered', '{}' FROM generate_series(1, 9) i`,
    );
    // A subscription's page read: prepared, it keeps the generic plan made now as the table grows.
    const pageRead = {
      text: `SELECT position, stream_id, data FROM hcp_events WHERE position > $1::bigint ORDER BY position LIMIT $2`,
      values: ['0', 500],
    };
    expect(await migrate(ds)).toEqual({ analyzedTables: [] });
    expect(await statisticsOf('hcp_events')).toBe(0);
    const runner = ds.createQueryRunner();
    await runner.connect();
    try {
      // A custom plan is made again at each run, for the table as it is then.
      expect(await plansScanningWholeTable((sql) => runner.query(sql), pageRead, 'hcp_events')).not.toContain(
        'generic',
      );
    } finally {
      await runner.release();
    }
  });

  it('leaves alone a table whose rows were all deleted once it has been analyzed', async () => {
    const { ds } = database;
    await ds.query(`ALTER TABLE quota_vm_projects SET (autovacuum_enabled = false)`);
    await ds.query(
      `INSERT INTO quota_vm_projects (vm_id, project_id) SELECT 'vm-' || i, 'p' FROM generate_series(1, 50000) i`,
    );
    await ds.query(`DELETE FROM quota_vm_projects`);
    expect(await migrate(ds)).toEqual({ analyzedTables: ['public.quota_vm_projects'] });
    // Its pages remain until a vacuum, and ANALYZE found no live row to describe: no statistics, yet
    // nothing more to learn at every start.
    expect(await statisticsOf('quota_vm_projects')).toBe(0);
    expect(await migrate(ds)).toEqual({ analyzedTables: [] });
  });
});
