import { ApiClient, eventually } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/**
 * A schema that is not the one this release was built for (a newer release migrated the database, or
 * a migration was rolled back under a running HCP): writes answer 503 naming both versions, reads and
 * health go on, readiness is down; writes are accepted again once the schema matches.
 */
describe('schema mismatch', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;
  let choice: { image_id: string; flavor_id: string };
  let latest: { id: number; timestamp: string; name: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0' } });
    api = new ApiClient(hcp.baseUrl, hcp.token('sam', { schema: 'admin' }));
    choice = await seededChoice(api);
    [latest] = await queryDatabase(
      db.url,
      `SELECT id, "timestamp"::text AS timestamp, name FROM schema_migrations ORDER BY "timestamp" DESC LIMIT 1`,
    );
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  const create = (name: string) => api.post('/v1/projects/schema/vms', { name, zone: 'local', ...choice });

  async function refusedWrite() {
    return eventually(async () => {
      const res = await create('refused');
      return res.status === 503 ? res : undefined;
    }, 'a write to be refused');
  }

  async function acceptedWrite(name: string) {
    return eventually(async () => {
      const res = await create(name);
      return res.status === 202 ? res : undefined;
    }, 'a write to be accepted');
  }

  it('refuses writes while the database is ahead of the code, naming both versions', async () => {
    expect((await create('before')).status).toBe(202);
    await queryDatabase(db.url, `INSERT INTO schema_migrations ("timestamp", name) VALUES ($1, $2)`, [
      '9999999999999',
      'FromANewerRelease9999999999999',
    ]);

    const refused = await refusedWrite();
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.error).toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: {
        reason: 'unknown_migrations',
        code_version: latest.name,
        database_version: 'FromANewerRelease9999999999999',
      },
    });
    expect(refused.body.error.message).toContain('ahead of this release');
    expect(refused.body.error.message).toContain(latest.name);
    expect(refused.body.error.message).toContain('FromANewerRelease9999999999999');
    expect((await api.get('/v1/projects/schema/vms')).status).toBe(200);
    expect((await api.get('/health/live')).status).toBe(200);
    expect((await api.get('/health/ready')).status).toBe(503);

    await queryDatabase(db.url, `DELETE FROM schema_migrations WHERE name = 'FromANewerRelease9999999999999'`);
    expect((await acceptedWrite('after-newer')).status).toBe(202);
  });

  it('refuses writes while a migration of the code is missing from the database', async () => {
    await queryDatabase(db.url, `DELETE FROM schema_migrations WHERE id = $1`, [latest.id]);
    const refused = await refusedWrite();
    expect(refused.body.error.details).toMatchObject({ reason: 'pending_migrations', code_version: latest.name });
    expect(refused.body.error.details.database_version).not.toBe(latest.name);
    expect(refused.body.error.message).toContain('behind this release');

    await queryDatabase(db.url, `INSERT INTO schema_migrations (id, "timestamp", name) VALUES ($1, $2, $3)`, [
      latest.id,
      latest.timestamp,
      latest.name,
    ]);
    expect((await acceptedWrite('after-missing')).status).toBe(202);
    expect((await api.get('/health/ready')).status).toBe(200);
  });
});
