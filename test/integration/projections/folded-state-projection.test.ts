import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { decideVm, evolveVm, VmCreateRequestedData, VmEvent, VmState } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { vmReadModelProjection } from '@hcp/projections/vm-read-model/vm-read-model.projection';
import { inCheckpointedStatement } from '../../../projections/runner/checkpointed-statement';
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

  /** The state the domain's own evolve folds from these events, as the read model must hold it. */
  const foldOf = (events: DecodedEvent[]): VmState | null =>
    events.reduce<VmState | null>((state, e) => evolveVm(state, e.event as VmEvent, e.at), null);
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
    const running = foldOf([create, provisioned]);
    const stopRequested = decoded(id, decideVm(running, { type: 'stop', job_id: randomUUID(), force: true })[0]);
    await apply([create, provisioned, stopRequested]);
    const before = await row(id);
    await apply([create, provisioned, stopRequested]);
    expect(await row(id)).toEqual(before);
    expect(before.status).toBe('stopping');
  });

  describe('rows it wrote last (one projection instance, as the runner keeps it)', () => {
    const provisionedOf = (data: VmCreateRequestedData): VmEvent => ({
      type: 'VmProvisioned',
      version: 1,
      data: { job_id: data.job_id, power_state: 'running', addresses: [], provider_ref: {} },
    });
    /**
     * A batch as the runner applies it, with a checkpoint of its own: one statement when the projection
     * offers one that writes, else a transaction. Answers which it took, and the statements the
     * transaction sent.
     */
    const checkpoint = { name: `fold-${randomUUID()}`, at: -1n };
    const applyAsRunner = async (
      projection: ReturnType<typeof vmReadModelProjection>,
      events: DecodedEvent[],
    ): Promise<{ way: 'one statement' | 'transaction'; sent: string[] }> => {
      const move = { projection: checkpoint.name, previous: checkpoint.at, next: events.at(-1)!.position };
      const statement = projection.oneStatement(events);
      const sent: string[] = [];
      let way: 'one statement' | 'transaction' = 'one statement';
      if (!(statement && (await inCheckpointedStatement(ds, move, statement)))) {
        way = 'transaction';
        await ds.transaction(async (tx) => {
          const counted = new Proxy(tx, {
            get: (target, prop, receiver) =>
              prop === 'query'
                ? (sql: string, params?: unknown[]) => {
                    sent.push(sql);
                    return target.query(sql, params);
                  }
                : Reflect.get(target, prop, receiver),
          });
          await projection.apply(events, counted);
        });
        await ds.query(
          `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, $2, now())
                        ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position`,
          [checkpoint.name, move.next.toString()],
        );
      }
      checkpoint.at = move.next;
      return { way, sent };
    };

    it('writes the next state of a row it wrote as one statement with the checkpoint, without reading it back', async () => {
      const projection = vmReadModelProjection();
      const id = randomUUID();
      const data = createData(id);
      const create = decoded(id, decideVm(null, { type: 'create', data })[0]);
      expect(await applyAsRunner(projection, [create])).toMatchObject({
        way: 'transaction',
        sent: [expect.any(String), expect.any(String)],
      });

      const provisioned = decoded(id, provisionedOf(data));
      expect((await applyAsRunner(projection, [provisioned])).way).toBe('one statement');
      const r = await row(id);
      expect(r.status).toBe('running');
      expect(BigInt(r.position)).toBe(provisioned.position);
      expect(r.state).toEqual(foldOf([create, provisioned]));
      const stored = await ds.query(`SELECT position::text AS p FROM projection_checkpoints WHERE name = $1`, [
        checkpoint.name,
      ]);
      expect(stored[0].p).toBe(provisioned.position.toString());
    });

    it('inserts the row of an aggregate whose first event the batch holds in one statement, beside rows it remembers', async () => {
      const projection = vmReadModelProjection();
      const known = randomUUID();
      const knownData = createData(known);
      const knownCreate = decoded(known, decideVm(null, { type: 'create', data: knownData })[0]);
      await applyAsRunner(projection, [knownCreate]);

      const fresh = randomUUID();
      const freshCreate = {
        ...decoded(fresh, decideVm(null, { type: 'create', data: createData(fresh) })[0]),
        revision: 0n,
      };
      const knownProvisioned = decoded(known, provisionedOf(knownData));
      expect((await applyAsRunner(projection, [freshCreate, knownProvisioned])).way).toBe('one statement');
      expect((await row(fresh)).state).toEqual(foldOf([freshCreate]));
      expect(BigInt((await row(fresh)).position)).toBe(freshCreate.position);
      expect((await row(known)).state).toEqual(foldOf([knownCreate, knownProvisioned]));
    });

    it('goes through a transaction when the row of a first event is in the table already, and keeps it', async () => {
      const ours = vmReadModelProjection();
      const warm = randomUUID();
      await applyAsRunner(ours, [decoded(warm, decideVm(null, { type: 'create', data: createData(warm) })[0])]);
      // Another instance (a rebuild, a dead letter retried elsewhere) wrote this VM's row further on.
      const id = randomUUID();
      const data = createData(id);
      const create = { ...decoded(id, decideVm(null, { type: 'create', data })[0]), revision: 0n };
      const provisioned = decoded(id, provisionedOf(data));
      await apply([create, provisioned]);

      expect((await applyAsRunner(ours, [create])).way).toBe('transaction');
      const r = await row(id);
      expect(r.status).toBe('running');
      expect(BigInt(r.position)).toBe(provisioned.position);
    });

    it('reads and folds again a row someone else wrote since, instead of overwriting it', async () => {
      const ours = vmReadModelProjection();
      const id = randomUUID();
      const data = createData(id);
      const create = decoded(id, decideVm(null, { type: 'create', data })[0]);
      await applyAsRunner(ours, [create]);
      // Another writer (a dead letter retried by another process) moves the row on meanwhile.
      const address = { type: 'ipv4', address: '10.0.0.9', nic: 'eth0' } as const;
      const provisioned = decoded(id, {
        ...provisionedOf(data),
        data: { ...provisionedOf(data).data, addresses: [address] },
      } as VmEvent);
      await apply([provisioned]);

      const running = foldOf([create, provisioned]);
      const stopRequested = decoded(id, decideVm(running, { type: 'stop', job_id: randomUUID(), force: true })[0]);
      // Its one statement is refused by the guard, and the batch goes through a transaction that reads the row.
      expect(await applyAsRunner(ours, [stopRequested])).toMatchObject({
        way: 'transaction',
        sent: [expect.any(String), expect.any(String)],
      });

      const r = await row(id);
      expect(r.status).toBe('stopping');
      expect(r.state).toEqual(evolveVm(running, stopRequested.event as VmEvent, stopRequested.at));
      expect((r.state as VmState).addresses).toEqual([address]);
      expect(BigInt(r.position)).toBe(stopRequested.position);
    });

    it('writes a replayed event the table never kept, though it remembers having written it', async () => {
      const projection = vmReadModelProjection();
      const id = randomUUID();
      const data = createData(id);
      const create = decoded(id, decideVm(null, { type: 'create', data })[0]);
      await applyAsRunner(projection, [create]);
      const provisioned = decoded(id, provisionedOf(data));
      // Its write is lost with its transaction (a COMMIT that failed, a server that crashed)...
      await expect(
        ds.transaction(async (tx) => {
          await projection.apply([provisioned], tx);
          throw new Error('the commit failed');
        }),
      ).rejects.toThrow('the commit failed');

      // ...and the runner, restarted from its checkpoint, hands the same event over again.
      expect((await applyAsRunner(projection, [provisioned])).way).toBe('transaction');
      const r = await row(id);
      expect(r.status).toBe('running');
      expect(BigInt(r.position)).toBe(provisioned.position);
    });

    it('reads the row again after a transaction of its own rolled back', async () => {
      const projection = vmReadModelProjection();
      const id = randomUUID();
      const data = createData(id);
      const create = decoded(id, decideVm(null, { type: 'create', data })[0]);
      await applyAsRunner(projection, [create]);
      const lost = decoded(id, {
        ...provisionedOf(data),
        data: { ...provisionedOf(data).data, power_state: 'stopped' },
      } as VmEvent);
      await expect(
        ds.transaction(async (tx) => {
          await projection.apply([lost], tx);
          throw new Error('the checkpoint moved');
        }),
      ).rejects.toThrow('the checkpoint moved');

      // The next batch starts after the lost one (as after a dead letter): the row is folded from the table.
      const provisioned = decoded(id, provisionedOf(data));
      expect((await applyAsRunner(projection, [provisioned])).way).toBe('transaction');
      const r = await row(id);
      expect(r.state).toEqual(foldOf([create, provisioned]));
    });
  });
});
