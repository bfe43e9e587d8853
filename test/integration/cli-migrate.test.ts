import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { createDataSource } from '../../src/platform/persistence/data-source';
import { migrateDown, migrateUp } from '../../src/platform/persistence/schema-changes';
import { CODE_MIGRATIONS } from '../../src/platform/persistence/schema-versions';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';
import { cleanUp, serverProcesses, tempDataDir } from './local-postgres/local-postgres.fixtures';

const root = path.join(__dirname, '../..');

// Each command is a fresh Node process compiling the CLI with ts-node: seconds each, more on a busy machine.
jest.setTimeout(300_000);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('npm run admin -- migrate', () => {
  let db: TestDatabase;
  let dataDir: string;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_cli_migrate');
    dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-cli-migrate-'));
  });

  afterAll(async () => {
    await cleanUp();
    await db?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** The CLI as an operator runs it: its own process, the database named by DATABASE_URL. */
  function hcp(...args: string[]): Promise<Run> {
    return hcpWith({ DATABASE_URL: db.url, HCP_DATA_DIR: dataDir }, ...args);
  }

  function hcpWith(env: Record<string, string>, ...args: string[]): Promise<Run> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [path.join(root, 'scripts/ts-run.js'), 'src/cli/admin.ts', 'migrate', ...args],
        { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } },
        (err, stdout, stderr) => {
          const code = err ? Number((err as { code?: number }).code ?? 1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });
  }

  /** Set-up through the library, so only the behaviour under test pays for a CLI process. */
  async function withDataSource<T>(work: (ds: DataSource) => Promise<T>): Promise<T> {
    const ds = createDataSource(db.url, { poolSize: 2 });
    await ds.initialize();
    try {
      return await work(ds);
    } finally {
      await ds.destroy();
    }
  }

  const names = CODE_MIGRATIONS.map((m) => m.name);

  it('reports a fresh database behind, brings it up, in step, down to a version and behind again', async () => {
    const behind = await hcp('status');
    expect(behind.code).toBe(3);
    expect(behind.stdout).toContain(`schema: behind this release (${names.length} pending)`);
    for (const name of names) expect(behind.stdout).toMatch(new RegExp(`pending +\\d{13} +${name}`));

    const up = await hcp('up');
    expect(up.code).toBe(0);
    for (const name of names) expect(up.stdout).toContain(`applied   ${name}`);

    const inStep = await hcp('status', '--output', 'json');
    expect(inStep.code).toBe(0);
    expect(JSON.parse(inStep.stdout)).toMatchObject({ state: 'in_step', pending: [], unknown: [] });

    const target = CODE_MIGRATIONS[2];
    const down = await hcp('down', '--to', target.name, '--output', 'json');
    expect(down.code).toBe(0);
    expect(JSON.parse(down.stdout)).toMatchObject({
      reverted: names.slice(3).reverse(),
      state: 'behind',
      pending: names.slice(3),
    });
    const applied = await queryDatabase<{ name: string }>(db.url, 'SELECT name FROM schema_migrations ORDER BY id');
    expect(applied.map((r) => r.name)).toEqual(names.slice(0, 3));
  });

  it('applies up to a version given by its timestamp and stops there', async () => {
    await withDataSource((ds) => migrateDown(ds, 0));
    const up = await hcp('up', '--to', String(CODE_MIGRATIONS[1].version), '--output', 'json');
    expect(up.code).toBe(0);
    expect(JSON.parse(up.stdout)).toMatchObject({ applied: names.slice(0, 2), pending: names.slice(2) });
  });

  it('refuses a version this release does not have, and a default down onto the event store', async () => {
    const unknown = await hcp('up', '--to', 'NoSuchMigration1700000000000');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('this release has no migration NoSuchMigration1700000000000');

    await withDataSource((ds) => migrateDown(ds, CODE_MIGRATIONS[0].version));
    const refused = await hcp('down');
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain(`refused to revert ${names[0]}`);
    const applied = await queryDatabase<{ name: string }>(db.url, 'SELECT name FROM schema_migrations');
    expect(applied.map((r) => r.name)).toEqual([names[0]]);
  });

  it('reports a database migrated by a newer release as ahead', async () => {
    await withDataSource((ds) => migrateUp(ds));
    await queryDatabase(
      db.url,
      `INSERT INTO schema_migrations ("timestamp", name) VALUES (1799999999999, 'FromANewerRelease1799999999999')`,
    );
    const ahead = await hcp('status');
    expect(ahead.code).toBe(4);
    expect(ahead.stdout).toMatch(/unknown +1799999999999 +FromANewerRelease1799999999999/);
  });

  it('works on the embedded PostgreSQL of HCP_DATA_DIR without DATABASE_URL, and stops the server it started', async () => {
    const folder = await tempDataDir();
    const up = await hcpWith({ HCP_DATA_DIR: folder }, 'up', '--to', CODE_MIGRATIONS[0].name, '--output', 'json');
    expect(up.code).toBe(0);
    expect(JSON.parse(up.stdout)).toMatchObject({ applied: [names[0]], pending: names.slice(1) });
    expect(await serverProcesses(folder)).toEqual([]);
  });
});
