import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { createHcpUpcasters, HcpError, VmState, VmStatus } from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { vmReadModelProjection } from '@hcp/projections/vm-read-model/vm-read-model.projection';
import { ProjectionRunner } from '@hcp/projections/runner/projection-runner';
import { presentVm, VM_VIEW_FIELDS } from '@hcp/projections';
import { VmQueries } from '../../../src/vms/vm.queries';
import { VmRepository } from '../../../src/vms/vm.repository';
import { givenVm } from '../../fakes/vm-histories';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';

/** The tenant's VM reads answer the JSON text the projection stored; these pin it to presentVm of the stored state. */
describe('VM queries on the read model', () => {
  let db: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let runner: ProjectionRunner;
  let queries: VmQueries;
  const created: Array<{ id: string; status: VmStatus }> = [];

  beforeAll(async () => {
    db = await migratedTestDatabase('hcp_vmq', 4);
    ds = db.ds;
    pool = new Pool({ connectionString: db.db.url, max: 4 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    const codec = new DomainEventCodec(createHcpUpcasters());
    const vms = new VmRepository(store, codec);
    // Statuses reached by the create alone: later operations' given job ids are not the read model's uuids.
    const statuses: VmStatus[] = ['running', 'provisioning', 'error', 'running', 'error', 'provisioning', 'running'];
    for (const [i, status] of statuses.entries()) {
      const data = await givenVm(vms, status, {
        project_id: 'pq',
        name: i === 0 ? 'wéb-✓ "quoted" \\ back' : `vm-${i}`,
        tags: i === 0 ? { 'tier/ü': 'a "b"', empty: '' } : { env: i % 2 ? 'dev' : 'prod' },
        metadata: i === 1 ? {} : { line: 'one\ntwo\ttab' },
      });
      created.push({ id: data.vm_id, status });
    }
    await givenVm(vms, 'running', { project_id: 'elsewhere' });
    runner = new ProjectionRunner(ds, store, codec, vmReadModelProjection(), { batchSize: 100, retryMs: 100 });
    runner.start();
    const rows = async () => Number((await ds.query(`SELECT count(*) AS n FROM vm_read_model`))[0].n);
    for (let i = 0; i < 200 && (await rows()) < statuses.length + 1; i++) await new Promise((r) => setTimeout(r, 50));
    queries = new VmQueries(ds);
  });

  afterAll(async () => {
    await runner?.stop();
    await store?.close();
    await pool?.end();
    await db?.close();
  });

  const storedState = async (id: string): Promise<VmState> =>
    (await ds.query(`SELECT state FROM vm_read_model WHERE id = $1`, [id]))[0].state;

  it('answers a VM as presentVm answers its stored state, fields in the view order, escapes included', async () => {
    for (const { id } of created) {
      const text = (await queries.get('pq', id)).text;
      expect(JSON.parse(text)).toEqual(presentVm(await storedState(id)));
      expect(Object.keys(JSON.parse(text))).toEqual([...VM_VIEW_FIELDS]);
    }
  });

  it('never answers placement or other state a tenant must not see', async () => {
    const text = (await queries.get('pq', created[0].id)).text;
    expect(text).not.toContain('placement');
    expect(text).not.toContain('prov-1');
  });

  it("refuses another project's VM as not found", async () => {
    const refused = await queries.get('elsewhere', created[0].id).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(HcpError);
    expect((refused as HcpError).code).toBe('NOT_FOUND');
  });

  it('pages the same VMs, in the same order, with the same cursors as the parsed pages ops read', async () => {
    for (const filter of [{}, { status: 'error' }, { tags: [{ key: 'env', value: 'dev' }] }]) {
      let cursor: string | undefined;
      let opsCursor: string | undefined;
      const seen: string[] = [];
      do {
        const page = JSON.parse((await queries.list('pq', filter, 2, cursor)).text);
        const opsPage = await queries.listForOps({ ...filter, projectId: 'pq' }, 2, opsCursor);
        expect(page.items).toEqual(opsPage.items.map(({ placement: _, ...view }) => view));
        expect(page.next_cursor).toBe(opsPage.next_cursor);
        seen.push(...page.items.map((vm: { id: string }) => vm.id));
        cursor = page.next_cursor ?? undefined;
        opsCursor = opsPage.next_cursor ?? undefined;
      } while (cursor);
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen).size).toBe(seen.length);
    }
    const all = JSON.parse((await queries.list('pq', {}, 50)).text);
    expect(all.items.map((vm: { id: string }) => vm.id).sort()).toEqual(
      created
        .filter((vm) => vm.status !== 'deleted')
        .map((vm) => vm.id)
        .sort(),
    );
    expect(all.next_cursor).toBeNull();
  });
});
