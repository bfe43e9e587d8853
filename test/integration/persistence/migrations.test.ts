import { createDataSource, schemaStatus } from '../../../src/platform/persistence/data-source';
import { MIGRATIONS } from '../../../src/platform/persistence/migrations';
import { migrate } from '../../../src/platform/persistence/migrate';
import { migrateDown } from '../../../src/platform/persistence/schema-changes';
import { CODE_MIGRATIONS } from '../../../src/platform/persistence/schema-versions';
import { createTestDatabase, queryDatabase, TestDatabase } from '../../support/test-database';
import { presentVm } from '@hcp/projections';
import { requestedVm } from '../../../libs/domain/src/vm/vm-state.fixture';

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

  it('gives the VMs projected before the view column the view the projection writes', async () => {
    const fresh = await createTestDatabase('hcp_migrations');
    const ds = createDataSource(fresh.url, { poolSize: 2 });
    await ds.initialize();
    try {
      await migrate(ds);
      // Back to the schema just before the view column, whatever came after it.
      const viewAdded = CODE_MIGRATIONS.findIndex((m) => m.name === 'VmReadModelView1767744000070');
      expect(await migrateDown(ds, CODE_MIGRATIONS[viewAdded - 1]!.version)).toMatchObject({ ok: true });
      const state = requestedVm({
        vm_id: '4b0c2d4e-9a51-4c1e-8f7e-0d3c5b8a6e21',
        job_id: '7d7f9a0c-2b1e-4c3d-9e8f-1a2b3c4d5e6f',
        name: 'wéb "one"',
        tags: { env: 'prod' },
        metadata: { line: 'one\ntwo' },
      });
      await ds.query(
        `INSERT INTO vm_read_model (id, project_id, name, zone, image_id, flavor_id, status, desired_state, addresses, tags,
                                    metadata, last_job_id, created_at, updated_at, state, position)
         SELECT (s->>'id')::uuid, s->>'project_id', s->>'name', s->>'zone', s->>'image_id', s->>'flavor_id', s->>'status',
                s->>'desired_state', s->'addresses', s->'tags', s->'metadata', (s->>'last_job_id')::uuid,
                (s->>'created_at')::timestamptz, (s->>'updated_at')::timestamptz, s, 7
         FROM (SELECT $1::jsonb AS s) AS given`,
        [JSON.stringify(state)],
      );
      await migrate(ds);
      const [{ view }] = await ds.query(`SELECT view FROM vm_read_model WHERE id = $1`, [state.id]);
      expect(JSON.parse(view)).toEqual(presentVm(state));
      expect(Object.keys(JSON.parse(view))).toEqual(Object.keys(presentVm(state)));
    } finally {
      await ds.destroy();
      await fresh.drop();
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
