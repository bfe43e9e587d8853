import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Keyring, LocalKeyWrapper, SecretBox } from '@hcp/secrets';
import { ProviderCredentialsStore } from '../../../src/ops/drivers/provider-credentials.store';
import { createDataSource } from '../../../src/platform/persistence/data-source';
import { migrate } from '../../../src/platform/persistence/migrate';
import { createTestDatabase, TestDatabase } from '../../support/test-database';

const key = () => randomBytes(32).toString('base64');

describe('provider credentials key rotation', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_rotation');
    ds = createDataSource(db.url, { poolSize: 4 });
    await ds.initialize();
    await migrate(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('re-wraps every credential with the new KEK so the old one can be retired, while reads go on', async () => {
    const k1 = key();
    const k2 = key();
    const before = new ProviderCredentialsStore(
      ds,
      new SecretBox(new LocalKeyWrapper(Keyring.fromEnvValue(`k1:${k1}`, undefined))),
    );
    for (let i = 0; i < 5; i++) await before.put(`prov-${i}`, { user: `u${i}`, password: `secret-${i}` });

    const during = new ProviderCredentialsStore(
      ds,
      new SecretBox(new LocalKeyWrapper(Keyring.fromEnvValue(`k1:${k1},k2:${k2}`, 'k2'))),
    );
    const [result] = await Promise.all([
      during.rotate(),
      ...Array.from({ length: 5 }, (_, i) => during.get(`prov-${i}`)),
    ]);
    expect(result).toMatchObject({ scanned: 5, rewrapped: 5, failed: [] });
    expect((await during.rotate()).alreadyCurrent).toBe(5);

    const after = new ProviderCredentialsStore(
      ds,
      new SecretBox(new LocalKeyWrapper(Keyring.fromEnvValue(`k2:${k2}`, undefined))),
    );
    for (let i = 0; i < 5; i++)
      expect(await after.get(`prov-${i}`)).toEqual({ user: `u${i}`, password: `secret-${i}` });
    await expect(before.get('prov-0')).rejects.toThrow();
  });

  it('does not open a credential copied to another provider', async () => {
    const store = new ProviderCredentialsStore(
      ds,
      new SecretBox(new LocalKeyWrapper(Keyring.fromEnvValue(`k:${key()}`, undefined))),
    );
    await store.put('original', { password: 'x' });
    await ds.query(
      `INSERT INTO provider_credentials (provider_id, sealed) SELECT 'copy', sealed FROM provider_credentials WHERE provider_id = 'original'`,
    );
    await expect(store.get('copy')).rejects.toThrow();
  });
});
