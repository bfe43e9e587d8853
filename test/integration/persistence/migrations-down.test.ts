import { DataSource } from 'typeorm';
import { createDataSource } from '../../../src/platform/persistence/data-source';
import { migrateDown, migrateUp } from '../../../src/platform/persistence/schema-changes';
import { CODE_MIGRATIONS, schemaVersions } from '../../../src/platform/persistence/schema-versions';
import { createTestDatabase, TestDatabase } from '../../support/test-database';
import { dumpSchema } from './migrations-schema-dump';

describe('every migration can be reverted', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let empty: Record<string, string[]>;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_migrations_down');
    empty = await dumpSchema(db.url);
    ds = createDataSource(db.url, { poolSize: 2 });
    await ds.initialize();
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('reverts all migrations to a schema like a fresh database, and re-applies them to the same schema', async () => {
    expect(await migrateUp(ds)).toEqual(CODE_MIGRATIONS.map((m) => m.name));
    const full = await dumpSchema(db.url);
    expect(full.relations.length).toBeGreaterThan(empty.relations.length);

    const down = await migrateDown(ds, 0);
    expect(down).toEqual({ ok: true, reverted: CODE_MIGRATIONS.map((m) => m.name).reverse() });
    expect(await dumpSchema(db.url)).toEqual(empty);
    expect((await schemaVersions(ds)).pending).toEqual(CODE_MIGRATIONS.map((m) => m.name));

    await migrateUp(ds);
    expect(await dumpSchema(db.url)).toEqual(full);
  });

  it.each(CODE_MIGRATIONS.map((m, i) => [m.name, i] as const))(
    '%s: down undoes exactly what up did, and up again does the same',
    async (name, index) => {
      const before = CODE_MIGRATIONS[index - 1]?.version ?? 0;
      await migrateDown(ds, before);
      await migrateUp(ds, before);
      const beforeUp = await dumpSchema(db.url);

      expect(await migrateUp(ds, CODE_MIGRATIONS[index].version)).toEqual([name]);
      const afterUp = await dumpSchema(db.url);
      expect(afterUp).not.toEqual(beforeUp);

      expect(await migrateDown(ds, before)).toEqual({ ok: true, reverted: [name] });
      expect(await dumpSchema(db.url)).toEqual(beforeUp);

      await migrateUp(ds, CODE_MIGRATIONS[index].version);
      expect(await dumpSchema(db.url)).toEqual(afterUp);
    },
  );

  it('reverts one step by default, but never the event store without an explicit down to 0', async () => {
    await migrateUp(ds);
    const last = CODE_MIGRATIONS[CODE_MIGRATIONS.length - 1].name;
    expect(await migrateDown(ds)).toEqual({ ok: true, reverted: [last] });

    await migrateDown(ds, CODE_MIGRATIONS[0].version);
    const first = CODE_MIGRATIONS[0].name;
    expect(await migrateDown(ds)).toEqual({ ok: false, reason: 'event_store', migrations: [first] });
    expect((await schemaVersions(ds)).appliedOrder).toEqual([first]);
  });

  it('refuses to revert a migration applied by another release, and reverts nothing', async () => {
    await migrateUp(ds);
    await ds.query(
      `INSERT INTO schema_migrations ("timestamp", name) VALUES (1799999999999, 'FromANewerRelease1799999999999')`,
    );
    try {
      expect(await migrateDown(ds, CODE_MIGRATIONS[2].version)).toEqual({
        ok: false,
        reason: 'unknown_migrations',
        migrations: ['FromANewerRelease1799999999999'],
      });
      expect((await schemaVersions(ds)).pending).toEqual([]);
    } finally {
      await ds.query(`DELETE FROM schema_migrations WHERE name = 'FromANewerRelease1799999999999'`);
    }
  });
});
