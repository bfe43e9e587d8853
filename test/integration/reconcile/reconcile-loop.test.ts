import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { register } from 'prom-client';
import { createHcpUpcasters, decideVm, recordVmOutcome, VmCreateRequestedData, VmEvent, VmState } from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { vmReadModelProjection } from '@hcp/projections/vm-read-model/vm-read-model.projection';
import {
  type ProviderDriver,
  SimulatorDriver,
  SimulatorFaults,
  SimulatorState,
  simulatorLatency,
} from '@hcp/providers';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { HcpMetrics } from '../../../src/platform/observability/hcp-metrics';
import { ClusterReconciler } from '../../../src/reconcile/cluster-reconciler';
import { ClusterScanned } from '../../../src/reconcile/cluster-scanned';
import { ReconcileLeases } from '../../../src/reconcile/reconcile-leases';
import { ReconcileLoop } from '../../../src/reconcile/reconcile-loop';
import { VmReconciler } from '../../../src/reconcile/vm-reconciler';
import { VmRepository } from '../../../src/vms/vm.repository';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/**
 * The reconcile loop on real PostgreSQL (event store, read model, leases) against the simulator driver:
 * one leased owner per cluster, takeover of an expired lease, drift recorded as events, and a failing
 * run followed by a good one.
 */
describe('reconcile loop', () => {
  const PROVIDER = 'prov-reconcile';
  const CLUSTER = 'cluster-reconcile';
  let database: MigratedDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  let codec: DomainEventCodec;
  let vms: VmRepository;
  let sim: SimulatorState;
  let driver: SimulatorDriver;
  let metrics: HcpMetrics;
  const scans: ClusterScanned[] = [];

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_reconcile', 4);
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    codec = new DomainEventCodec(createHcpUpcasters());
    vms = new VmRepository(store, codec);
    sim = new SimulatorState(pool, `sim_reconcile_${randomBytes(4).toString('hex')}`);
    await sim.install();
    driver = simulator('');
    register.clear();
    metrics = new HcpMetrics();
  });

  afterAll(async () => {
    register.clear();
    await sim?.drop();
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  function simulator(faults: string): SimulatorDriver {
    return new SimulatorDriver({
      state: sim,
      latency: simulatorLatency({ scale: 0 }),
      faults: SimulatorFaults.parse(faults),
      clusterId: CLUSTER,
      providerId: PROVIDER,
    });
  }

  function loop(holder: string, driverOf: () => ProviderDriver = () => driver, leaseMs = 60_000): ReconcileLoop {
    const reconciler = new ClusterReconciler(database.ds, vms, new VmReconciler(vms, metrics), (s) => scans.push(s));
    return new ReconcileLoop(
      async () => [{ provider_id: PROVIDER, cluster_id: CLUSTER }],
      async () => driverOf(),
      new ReconcileLeases(database.ds),
      reconciler,
      metrics,
      { leaseMs, holder },
    );
  }

  /** The read model the loop finds a cluster's VMs in, brought up to the VM's stream. */
  async function project(vmId: string): Promise<void> {
    const recorded = await store.readStream(`vm-${vmId}`);
    await database.ds.transaction((tx) =>
      vmReadModelProjection().apply(
        recorded.map((r) => codec.decode(r)),
        tx,
      ),
    );
  }

  /** A VM HCP created on the simulator, running, with its events and read-model row. */
  async function runningVm(tags: Record<string, string> = {}): Promise<string> {
    const id = randomUUID();
    const data: VmCreateRequestedData = {
      vm_id: id,
      project_id: 'rec',
      job_id: randomUUID(),
      name: 'web',
      zone: 'local',
      image_id: 'img',
      flavor_id: 'small',
      resources: { vcpus: 1, ram_mb: 512, disk_gb: 10 },
      placement: { provider_id: PROVIDER, cluster_id: CLUSTER, image_ref: 'tmpl' },
      tags,
      metadata: {},
      ssh_keys: [],
      power_on: true,
    };
    const ctx = eventContext('tester', randomUUID());
    await vms.update(id, (s) => decideVm(s, { type: 'create', data }), ctx);
    const made = await driver.createVm(
      {
        hcp_id: id,
        project_id: 'rec',
        name: 'web',
        image_ref: 'tmpl',
        vcpus: 1,
        ram_mb: 512,
        disk_gb: 10,
        ssh_keys: [],
        tags,
        power_on: true,
      },
      { deadline: new Date(Date.now() + 10_000), signal: new AbortController().signal },
    );
    await vms.update(
      id,
      (s) =>
        recordVmOutcome(s, {
          type: 'succeeded',
          job_id: data.job_id,
          operation: 'create',
          power_state: 'running',
          addresses: made.addresses,
        }),
      ctx,
    );
    await project(id);
    return id;
  }

  const eventsOf = async (id: string): Promise<VmEvent[]> => vms.history(id);
  const stateOf = async (id: string): Promise<VmState> => (await vms.load(id)).state!;
  const counter = async (name: string) =>
    ((await register.getSingleMetric(name)?.get())?.values ?? []).reduce((n, v) => n + v.value, 0);

  it('records a VM stopped behind HCP back as stopped, once, and publishes the cluster listing', async () => {
    const id = await runningVm();
    await sim.setPower(id, 'stopped', []);
    const scansBefore = scans.length;

    expect(await loop('solo').runOnce()).toEqual([{ provider_id: PROVIDER, cluster_id: CLUSTER }]);

    expect(await stateOf(id)).toMatchObject({ status: 'stopped', desired_state: 'stopped', addresses: [] });
    const observed = (await eventsOf(id)).filter((e) => e.type === 'VmStateObserved');
    expect(observed).toHaveLength(1);
    const scan = scans[scansBefore];
    expect(scan).toMatchObject({ provider_id: PROVIDER, cluster_id: CLUSTER });
    expect(scan.resources.find((r) => r.description.hcp_id === id)?.vm?.status).toBe('stopped');

    // Level-driven: a second pass over the same truth records nothing more.
    await loop('solo').runOnce();
    expect((await eventsOf(id)).filter((e) => e.type === 'VmStateObserved')).toHaveLength(1);
    await new ReconcileLeases(database.ds).release(`${PROVIDER}/${CLUSTER}`, 'solo');
  });

  it('lets only one of two processes reconcile a cluster at a time', async () => {
    const id = await runningVm();
    await sim.setPower(id, 'stopped', []);
    const [a, b] = await Promise.all([loop('process-a').runOnce(), loop('process-b').runOnce()]);
    expect(a.length + b.length).toBe(1);
    expect((await eventsOf(id)).filter((e) => e.type === 'VmStateObserved')).toHaveLength(1);
    // The holder keeps the cluster on its next run; the other still does not get it.
    const holder = a.length ? 'process-a' : 'process-b';
    const other = a.length ? 'process-b' : 'process-a';
    expect(await loop(holder).runOnce()).toHaveLength(1);
    expect(await loop(other).runOnce()).toHaveLength(0);
    await new ReconcileLeases(database.ds).release(`${PROVIDER}/${CLUSTER}`, holder);
  });

  it('takes over the cluster of a holder that died once its lease has expired', async () => {
    const leases = new ReconcileLeases(database.ds);
    const key = `${PROVIDER}/${CLUSTER}`;
    expect(await loop('dead-holder').runOnce()).toHaveLength(1);
    expect(await loop('survivor').runOnce()).toHaveLength(0);
    // The dead holder renews no more: its lease runs out.
    await database.ds.query(
      `UPDATE reconcile_leases SET expires_at = now() - interval '1 second' WHERE cluster_key = $1`,
      [key],
    );
    const id = await runningVm();
    await sim.setPower(id, 'stopped', []);
    expect(await loop('survivor').runOnce()).toHaveLength(1);
    expect(await leases.holderOf(key)).toBe('survivor');
    expect((await stateOf(id)).status).toBe('stopped');
    await leases.release(key, 'survivor');
  });

  it('gives its leases back on shutdown, so another process takes the cluster over at once', async () => {
    const leaving = loop('leaving');
    expect(await leaving.runOnce()).toHaveLength(1);
    expect(await loop('staying').runOnce()).toHaveLength(0);
    await leaving.releaseAll();
    expect(await loop('staying').runOnce()).toHaveLength(1);
    await new ReconcileLeases(database.ds).release(`${PROVIDER}/${CLUSTER}`, 'staying');
  });

  it('counts a run whose provider listing fails, and the next run reconciles', async () => {
    const id = await runningVm();
    await sim.setPower(id, 'stopped', []);
    let current: ProviderDriver = simulator('list=fail:PROVIDER_UNAVAILABLE');
    const owner = loop('flaky', () => current);
    const failuresBefore = await counter('hcp_reconcile_failures_total');

    expect(await owner.runOnce()).toHaveLength(0);
    expect(await counter('hcp_reconcile_failures_total')).toBe(failuresBefore + 1);
    expect((await stateOf(id)).status).toBe('running');

    current = driver;
    expect(await owner.runOnce()).toHaveLength(1);
    expect((await stateOf(id)).status).toBe('stopped');
    await owner.releaseAll();
  });

  it('puts a VM deleted behind HCP back in error with the reason vanished_at_provider', async () => {
    const id = await runningVm();
    await sim.deleteByHcpId(id);
    const owner = loop('vanish');
    await owner.runOnce();
    const vm = await stateOf(id);
    expect(vm.status).toBe('error');
    expect(vm.last_error).toMatchObject({ code: 'NOT_FOUND', details: { reason: 'vanished_at_provider' } });
    await owner.releaseAll();
  });

  it('leaves a VM a job owns to that job', async () => {
    const id = await runningVm();
    await vms.update(
      id,
      (s) => decideVm(s, { type: 'stop', job_id: randomUUID(), force: false }),
      eventContext('t', 'x'),
    );
    await project(id);
    await sim.deleteByHcpId(id);
    const owner = loop('owned');
    await owner.runOnce();
    expect((await stateOf(id)).status).toBe('stopping');
    await owner.releaseAll();
  });

  it('writes the tags HCP records to the provider when they differ', async () => {
    const id = await runningVm({ env: 'dev' });
    await vms.update(
      id,
      (s) => decideVm(s, { type: 'update_labels', tags: { env: 'prod', team: 'blue' } }),
      eventContext('t', 'x'),
    );
    await project(id);
    const owner = loop('tags');
    await owner.runOnce();
    expect((await sim.findByHcpId(id))?.tags).toEqual({ env: 'prod', team: 'blue' });
    await owner.releaseAll();
  });
  it('reconciles the other VMs of the cluster when one VM stream cannot be decoded', async () => {
    const [good, bad] = [await runningVm(), await runningVm()];
    // An event its schema refuses: reading the stream fails, in a batch with the others or alone.
    await store.append(
      `vm-${bad}`,
      [{ id: randomUUID(), type: 'VmStateObserved', data: { not: 'a valid observation' } }],
      'any',
    );
    await sim.setPower(good, 'stopped', []);
    await sim.setPower(bad, 'stopped', []);
    const owner = loop('undecodable');

    expect(await owner.runOnce()).toHaveLength(1);

    expect((await stateOf(good)).status).toBe('stopped');
    // Left out of the pass: nothing was decided on it.
    expect(await store.readStream(`vm-${bad}`)).toHaveLength(3);
    await owner.releaseAll();
  });
});
