import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { createHcpUpcasters, decideVm, VmCreateRequestedData } from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { quotaReadModelProjection } from '@hcp/projections/quota-read-model/quota-read-model.projection';
import { ProjectionRunner } from '@hcp/projections/runner/projection-runner';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { createDataSource } from '../../../src/platform/persistence/data-source';
import { migrate } from '../../../src/platform/persistence/migrate';
import { QuotaRepository } from '../../../src/quotas/quota.repository';
import { QuotaService } from '../../../src/quotas/quota.service';
import { QuotaSweeper } from '../../../src/vms/quota-sweeper';
import { VmRepository } from '../../../src/vms/vm.repository';
import { createTestDatabase, TestDatabase } from '../../support/test-database';

describe('quota sweeper', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let runner: ProjectionRunner;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_sweep');
    ds = createDataSource(db.url, { poolSize: 6 });
    await ds.initialize();
    await migrate(ds);
    pool = new Pool({ connectionString: db.url, max: 6 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
  });

  afterAll(async () => {
    await runner?.stop();
    await store?.close();
    await pool?.end();
    await ds?.destroy();
    await db?.drop();
  });

  it('releases a reservation whose VM was never recorded, one sweep after first seeing it, and keeps the others', async () => {
    const codec = new DomainEventCodec(createHcpUpcasters());
    const quotas = new QuotaService(new QuotaRepository(store, codec), ds);
    const vms = new VmRepository(store, codec);
    const ctx = eventContext('test', 'sweep');
    const ghost = randomUUID();
    const real = randomUUID();
    const resources = { vcpus: 1, ram_mb: 512, disk_gb: 10 };
    await quotas.reserve('sw', ghost, resources, ctx);
    await quotas.reserve('sw', real, resources, ctx);
    const data: VmCreateRequestedData = {
      vm_id: real,
      project_id: 'sw',
      job_id: randomUUID(),
      name: 'real',
      zone: 'z',
      image_id: 'i',
      flavor_id: 'f',
      resources,
      placement: { provider_id: 'p', cluster_id: 'c', image_ref: 'r' },
      tags: {},
      metadata: {},
      ssh_keys: [],
      power_on: true,
    };
    await vms.append({ id: real, state: null, revision: 'no_stream' }, decideVm(null, { type: 'create', data }), ctx);

    runner = new ProjectionRunner(ds, store, codec, quotaReadModelProjection(), { batchSize: 100, retryMs: 100 });
    runner.start();
    const usage = async () =>
      (await ds.query(`SELECT usage FROM project_quotas WHERE project_id = 'sw'`))[0]?.usage?.instances;
    for (let i = 0; i < 100 && (await usage()) !== 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await usage()).toBe(2);

    const sweeper = new QuotaSweeper(ds, vms, quotas);
    expect(await sweeper.sweep()).toBe(0); // first sight: only suspected
    expect(await sweeper.sweep()).toBe(1); // still missing a sweep later: released
    for (let i = 0; i < 100 && (await usage()) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await usage()).toBe(1);
    expect(await sweeper.sweep()).toBe(0);
  });
});
