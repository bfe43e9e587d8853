import { createDataSource, schemaStatus } from '../../../src/platform/persistence/data-source';
import { MIGRATIONS } from '../../../src/platform/persistence/migrations';
import { migrate } from '../../../src/platform/persistence/migrate';
import { createTestDatabase, queryDatabase, TestDatabase } from '../../support/test-database';

const TABLES = [
  'idempotency_keys',
  'hcp_events',
  'job_queue',
  'projection_checkpoints',
  'vm_read_model',
  'job_read_model',
  'ops_resources',
  'provider_credentials',
  'provider_health',
  'cluster_allocations',
  'cluster_usage',
  'project_quotas',
  'project_quota_reservations',
  'quota_vm_projects',
  'audit_log',
  'audit_jobs',
  'metering_records',
  'metering_vms',
];

async function tablesOf(url: string): Promise<string[]> {
  const rows = await queryDatabase<{ table_name: string }>(
    url,
    `SELECT table_name FROM information_schema.tables WHERE table_schema IN ('public', 'simulator') AND table_name <> 'schema_migrations' ORDER BY table_name`,
  );
  return rows.map((r) => r.table_name);
}

describe('schema migrations', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_migrations');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('migrates up, reports the expected version, migrates down to nothing and up again', async () => {
    const ds = createDataSource(db.url, { poolSize: 2 });
    await ds.initialize();
    try {
      expect(await schemaStatus(ds)).toEqual({
        ok: false,
        reason: 'pending_migrations',
        migrations: MIGRATIONS.map((m) => m.name),
      });
      await migrate(ds);
      expect(await schemaStatus(ds)).toEqual({ ok: true });
      expect(await tablesOf(db.url)).toEqual(expect.arrayContaining([...TABLES, 'vms']));

      for (let i = 0; i < MIGRATIONS.length; i++) await ds.undoLastMigration({ transaction: 'each' });
      expect(await tablesOf(db.url)).toEqual([]);
      expect((await schemaStatus(ds)).ok).toBe(false);

      await migrate(ds);
      await migrate(ds); // a second run finds nothing to do
      expect(await schemaStatus(ds)).toEqual({ ok: true });
    } finally {
      await ds.destroy();
    }
  });

  it('reports a database migrated by a newer release as not the expected schema', async () => {
    const ds = createDataSource(db.url, { poolSize: 2 });
    await ds.initialize();
    try {
      await migrate(ds);
      await ds.query(
        `INSERT INTO schema_migrations (timestamp, name) VALUES (9999999999999, 'FromTheFuture9999999999999')`,
      );
      expect(await schemaStatus(ds)).toEqual({
        ok: false,
        reason: 'unknown_migrations',
        migrations: ['FromTheFuture9999999999999'],
      });
    } finally {
      await ds.query(`DELETE FROM schema_migrations WHERE name = 'FromTheFuture9999999999999'`);
      await ds.destroy();
    }
  });

  it('lets concurrent starts migrate once', async () => {
    const fresh = await createTestDatabase('hcp_migrations');
    const sources = [
      createDataSource(fresh.url, { poolSize: 2 }),
      createDataSource(fresh.url, { poolSize: 2 }),
      createDataSource(fresh.url, { poolSize: 2 }),
    ];
    try {
      await Promise.all(sources.map((s) => s.initialize()));
      await Promise.all(sources.map((s) => migrate(s)));
      const applied = await queryDatabase(fresh.url, 'SELECT name FROM schema_migrations');
      expect(applied).toHaveLength(MIGRATIONS.length);
    } finally {
      await Promise.all(sources.map((s) => s.destroy()));
      await fresh.drop();
    }
  });
});
