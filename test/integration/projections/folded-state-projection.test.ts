import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { decideVm, evolveVm, VmCreateRequestedData, VmEvent, VmState } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { vmReadModelProjection } from '@hcp/projections/vm-read-model/vm-read-model.projection';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/**
 * The folded-state read model on real PostgreSQL: one row per aggregate, folded with the domain's own
 * evolve, written by one bulk upsert per batch, and idempotent by position when a batch is replayed.
 */
describe('folded-state projection (VM read model)', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let position = 0n;

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_folded');
    ds = database.ds;
  });

  afterAll(async () => {
    await database?.close();
  });

  const createData = (vmId: string, over: Partial<VmCreateRequestedData> = {}): VmCreateRequestedData => ({
    vm_id: vmId,
    project_id: 'fold',
    job_id: randomUUID(),
    name: 'web-1',
    zone: 'local',
    image_id: randomUUID(),
    flavor_id: randomUUID(),
    resources: { vcpus: 1, ram_mb: 512, disk_gb: 10 },
    placement: { provider_id: 'p', cluster_id: 'c', image_ref: 't' },
    tags: { env: 'dev', 'quote"d': "it's" },
    metadata: { note: 'unicode ✓ and "quotes"' },
    ssh_keys: [],
    power_on: true,
    ...over,
  });

  const decoded = (vmId: string, event: VmEvent, at = new Date().toISOString()): DecodedEvent => ({
    event,
    eventId: randomUUID(),
    streamId: `vm-${vmId}`,
    revision: 0n,
    position: ++position,
    at,
    context: {},
  });

  const apply = (events: DecodedEvent[]) => ds.transaction((tx) => vmReadModelProjection().apply(events, tx));
  const row = async (vmId: string) => (await ds.query(`SELECT * FROM vm_read_model WHERE id = $1`, [vmId]))[0];

  it('writes one row per VM with its queryable columns and the folded state', async () => {
    const a = randomUUID();
    const b = randomUUID();
    const created = [
      decideVm(null, { type: 'create', data: createData(a) })[0],
      decideVm(null, { type: 'create', data: createData(b, { name: 'db-1', power_on: false }) })[0],
    ];
    await apply([decoded(a, created[0], '2026-12-01T10:00:00.000Z'), decoded(b, created[1])]);
    const first = await row(a);
    expect(first).toMatchObject({
      project_id: 'fold',
      name: 'web-1',
      status: 'provisioning',
      desired_state: 'running',
      tags: { env: 'dev', 'quote"d': "it's" },
      metadata: { note: 'unicode ✓ and "quotes"' },
    });
    expect(first.created_at.toISOString()).toBe('2026-12-01T10:00:00.000Z');
    expect(first.state).toEqual(evolveVm(null, created[0], '2026-12-01T10:00:00.000Z'));
    expect((await row(b)).desired_state).toBe('stopped');
  });

  it('updates the row of a VM that exists, from the state it holds', async () => {
    const id = randomUUID();
    const data = createData(id);
    const create = decideVm(null, { type: 'create', data })[0];
    await apply([decoded(id, create)]);
    const provisioned: VmEvent = {
      type: 'VmProvisioned',
      version: 1,
      data: {
        job_id: data.job_id,
        power_state: 'running',
        addresses: [{ type: 'ipv4', address: '10.0.0.5', nic: 'eth0' }],
        provider_ref: {},
      },
    };
    await apply([decoded(id, provisioned)]);
    const r = await row(id);
    expect(r).toMatchObject({ status: 'running', addresses: [{ type: 'ipv4', address: '10.0.0.5', nic: 'eth0' }] });
    expect(BigInt(r.position)).toBe(position);
    expect((r.state as VmState).status).toBe('running');
  });

  it('ignores a replayed batch: events at or below a row’s position change nothing', async () => {
    const id = randomUUID();
    const data = createData(id);
    const create = decoded(id, decideVm(null, { type: 'create', data })[0]);
    const provisioned = decoded(id, {
      type: 'VmProvisioned',
      version: 1,
      data: { job_id: data.job_id, power_state: 'running', addresses: [], provider_ref: {} },
    });
    const running = [create, provisioned].reduce<VmState | null>((s, e) => evolveVm(s, e.event as VmEvent, e.at), null);
    const stopRequested = decoded(id, decideVm(running, { type: 'stop', job_id: randomUUID(), force: true })[0]);
    await apply([create, provisioned, stopRequested]);
    const before = await row(id);
    await apply([create, provisioned, stopRequested]);
    expect(await row(id)).toEqual(before);
    expect(before.status).toBe('stopping');
  });
});
