import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import {
  adoptVm,
  createHcpUpcasters,
  decideVm,
  HcpError,
  JobState,
  OrphanEvent,
  orphanEvent,
  recordVmOutcome,
  VmCreateRequestedData,
  VmEvent,
  VmState,
} from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore, RecordedEvent } from '@hcp/eventstore';
import { orphanReadModelProjection } from '@hcp/projections/orphan-read-model/orphan-read-model.projection';
import { ProxmoxDriver } from '@hcp/providers';
import { JobRepository } from '../../../src/jobs/job.repository';
import { JobAdmission } from '../../../src/jobs/queue/job-admission';
import { JobQueue } from '../../../src/jobs/queue/job-queue';
import { JobAttempt } from '../../../src/jobs/worker/job-executor';
import { OrphanAdopter } from '../../../src/orphans/commands/orphan-adopter';
import { OrphanDestroyer } from '../../../src/orphans/commands/orphan-destroyer';
import { OrphanDestroyExecutor } from '../../../src/orphans/jobs/orphan-destroy.executor';
import { OrphanJobDispatcherProjection } from '../../../src/orphans/jobs/orphan-job-dispatcher.projection';
import { OrphanQueries } from '../../../src/orphans/orphan.queries';
import { orphanIdOf, OrphanRepository } from '../../../src/orphans/orphan.repository';
import { ORPHAN_SCANNER_ACTOR, OrphanScan } from '../../../src/orphans/scan/orphan-scan';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { HcpMetrics } from '../../../src/platform/observability/hcp-metrics';
import { ClusterScanned } from '../../../src/reconcile';
import { VmRepository } from '../../../src/vms/vm.repository';
import { ProxmoxSimulator } from '../../simulators/proxmox/proxmox-simulator';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';
import { makeVmAtProxmox } from '../../support/proxmox-behind-hcp';

const PROVIDER = 'prv-pve';
const CLUSTER = 'cls-pve';
const OPS = eventContext('ingrid', 'trace-ops');
const FAILURE = { code: 'PROVIDER_UNAVAILABLE' as const, message: 'cloud-init refused', retryable: false };

/**
 * Orphans on real PostgreSQL and the Proxmox simulator: a cluster listing (ClusterScanned, as the
 * reconcile loop publishes it) makes orphans of provider VMs whose HCP id has no live VM; ops destroy
 * them through `orphan.destroy` jobs or give a failed create's VM back to its record.
 */
describe('orphans', () => {
  let sim: ProxmoxSimulator;
  let driver: ProxmoxDriver;
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let codec: DomainEventCodec;
  let vms: VmRepository;
  let orphans: OrphanRepository;
  let jobs: JobRepository;
  let queue: JobQueue;
  let destroyer: OrphanDestroyer;
  let executor: OrphanDestroyExecutor;
  let adopter: OrphanAdopter;
  let queries: OrphanQueries;
  /** Each test lists a cluster of its own, so one test's listings never clear another's orphans. */
  let cluster = '';

  beforeAll(async () => {
    sim = new ProxmoxSimulator({ latency: { scale: 0.01 } });
    const { url, fingerprint256 } = await sim.start();
    const token = sim.createToken();
    driver = new ProxmoxDriver({
      endpoint: url,
      credentials: { token_id: token.tokenId, token_secret: token.secret },
      tls: { fingerprint_sha256: fingerprint256 },
      settings: { storage: 'local-lvm', bridge: 'vmbr0', full_clone: true, shutdown_timeout_s: 2, address_wait_s: 0 },
      provider_id: PROVIDER,
      cluster_id: CLUSTER,
      timing: { taskPollMinMs: 5, taskPollMaxMs: 40, lockRetryBaseMs: 20, lockRetryMaxMs: 200, stopMarginMs: 200 },
      client: { retryBaseMs: 10, requestTimeoutMs: 5000 },
    });
    database = await migratedTestDatabase('hcp_orphans', 3);
    ds = database.ds;
    pool = new Pool({ connectionString: database.db.url, max: 3 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    codec = new DomainEventCodec(createHcpUpcasters());
    vms = new VmRepository(store, codec);
    orphans = new OrphanRepository(store, codec);
    jobs = new JobRepository(store, codec);
    queue = new JobQueue(ds);
    destroyer = new OrphanDestroyer(orphans, new JobAdmission(jobs, queue, ds), jobs);
    const metrics = new HcpMetrics();
    const drivers = { driverFor: async () => driver };
    executor = new OrphanDestroyExecutor(orphans, vms, drivers, metrics);
    adopter = new OrphanAdopter(orphans, vms, drivers, metrics);
    queries = new OrphanQueries(ds);
  });

  beforeEach(() => {
    cluster = `${CLUSTER}-${randomUUID().slice(0, 8)}`;
  });

  afterAll(async () => {
    await driver?.close();
    await store?.close();
    await pool?.end();
    await database?.close();
    await sim?.stop();
  });

  const scanner = (orphanPolicy: 'report' | 'destroy' = 'report') =>
    new OrphanScan(orphans, destroyer, ds, { orphanPolicy });

  /** HCP's record of a VM, written through its decider: how each test's VM got where it is. */
  async function vmRecord(vmId: string, steps: Array<'provisioned' | 'create_failed' | 'deleted'>): Promise<void> {
    const data: VmCreateRequestedData = {
      vm_id: vmId,
      project_id: 'acme',
      job_id: randomUUID(),
      name: 'web',
      zone: 'pve',
      image_id: 'img',
      flavor_id: 'small',
      resources: { vcpus: 1, ram_mb: 512, disk_gb: 8 },
      placement: { provider_id: PROVIDER, cluster_id: CLUSTER, image_ref: 'debian-12' },
      tags: {},
      metadata: {},
      ssh_keys: [],
      power_on: true,
    };
    await vms.update(vmId, (s) => decideVm(s, { type: 'create', data }), OPS);
    for (const step of steps) {
      await vms.update(vmId, (s) => stepEvents(s!, step), OPS);
    }
  }

  function stepEvents(vm: VmState, step: 'provisioned' | 'create_failed' | 'deleted'): VmEvent[] {
    if (step === 'provisioned')
      return recordVmOutcome(vm, { type: 'succeeded', job_id: vm.last_job_id, operation: 'create', addresses: [] });
    if (step === 'create_failed')
      return recordVmOutcome(vm, { type: 'failed', job_id: vm.last_job_id, operation: 'create', error: FAILURE });
    const job_id = randomUUID();
    const [requested] = decideVm(vm, { type: 'delete', job_id });
    const after = { ...vm, status: 'deleting' as const, pending_job_id: job_id };
    return [requested, ...recordVmOutcome(after, { type: 'succeeded', job_id, operation: 'delete', addresses: [] })];
  }

  /** The listing the reconcile loop would publish for these HCP ids. */
  async function scanOf(hcpIds: string[], at = new Date()): Promise<ClusterScanned> {
    const resources = [];
    for (const hcpId of hcpIds) {
      const description = await driver.describeVm(hcpId, call());
      if (description) resources.push({ description, vm: (await vms.load(hcpId)).state });
    }
    return new ClusterScanned(PROVIDER, cluster, at.toISOString(), resources);
  }

  /**
   * Folds these orphans' events into the read model, as the projection runner does (it skips what a row
   * holds already). Read from their streams: a read of all events stays below transactions other tests
   * on this server hold open.
   */
  async function refreshReadModel(...orphanIds: string[]): Promise<void> {
    const recorded: RecordedEvent[] = [];
    for (const id of orphanIds) recorded.push(...(await store.readStream(`orphan-${id}`)));
    recorded.sort((a, b) => (a.position < b.position ? -1 : 1));
    await ds.transaction((tx) =>
      orphanReadModelProjection().apply(
        recorded.map((r) => codec.decode(r)),
        tx,
      ),
    );
  }

  async function runJob(jobId: string): Promise<void> {
    const job = (await jobs.load(jobId)).state as JobState;
    const work = await executor.perform(job, attempt());
    if (work.kind === 'done') {
      await work.record();
      return;
    }
    if (work.kind === 'failed') return executor.recordFailure(job, asShape(work.error));
    throw new Error(`job ${jobId} had settled already`);
  }

  const orphanEvents = async (orphanId: string) =>
    (await store.readStream(`orphan-${orphanId}`)).map((r) => codec.decode<OrphanEvent>(r));

  it('lists the Proxmox VM of a deleted VM as an orphan, destroys it through its job, and the VM is gone from Proxmox', async () => {
    const vmId = randomUUID();
    await vmRecord(vmId, ['provisioned', 'deleted']);
    await makeVmAtProxmox(driver, vmId, true); // e.g. a delete that removed the wrong copy, or a VM restored from backup
    const orphanId = orphanIdOf(cluster, vmId);

    const outcome = await scanner().apply(await scanOf([vmId]));
    expect(outcome).toEqual({ found: [orphanId], cleared: [], destroy_jobs: [] });
    await refreshReadModel(orphanId);
    const listed = await queries.list({ cluster_id: cluster }, 50);
    expect(listed.items.find((o) => o.id === orphanId)).toMatchObject({
      hcp_id: vmId,
      project_id: 'acme',
      hcp_record: 'deleted',
      power_state: 'running',
      status: 'open',
      actions: ['destroy'],
    });
    expect(JSON.stringify(listed)).not.toMatch(/vmid|pve1|pve2|"node"/);

    const accepted = await destroyer.request(orphanId, { actor: 'ingrid', traceId: 'trace-destroy' }, 'ops');
    const job = (await jobs.load(accepted.job_id)).state!;
    expect(job).toMatchObject({ type: 'orphan.destroy', project_id: 'acme', resource_id: orphanId, actor: 'ingrid' });
    expect(await queue.existing(ds.manager, [accepted.job_id])).toEqual(new Set([accepted.job_id]));

    await runJob(accepted.job_id);
    expect(sim.vmsByHcpId(vmId)).toEqual([]);
    await refreshReadModel(orphanId);
    expect(await queries.get(orphanId)).toMatchObject({ status: 'destroyed', job_id: accepted.job_id, actions: [] });
    expect((await queries.list({ status: 'destroyed' }, 50)).items.map((o) => o.id)).toContain(orphanId);
    expect((await queries.list({}, 50)).items.map((o) => o.id)).not.toContain(orphanId);
  });

  it('answers a destroy retried with the same idempotency key with the same job, and opens no second one', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(driver, hcpId, false);
    const orphanId = orphanIdOf(cluster, hcpId);
    await scanner().apply(await scanOf([hcpId]));
    const ctx = { actor: 'ingrid', traceId: 't', idempotencyKey: `key-${hcpId}` };
    const first = await destroyer.request(orphanId, ctx, 'ops');
    const again = await destroyer.request(orphanId, ctx, 'ops');
    expect(again).toEqual(first);
    const requested = (await orphanEvents(orphanId)).filter((e) => e.event.type === 'OrphanDestroyRequested');
    expect(requested).toHaveLength(1);
    // An orphan HCP has no VM record for: its job runs in the reserved ops project, no tenant's.
    expect((await jobs.load(first.job_id)).state).toMatchObject({ project_id: '(ops)' });
    await runJob(first.job_id);
    expect(sim.vmsByHcpId(hcpId)).toEqual([]);
  });

  it('refuses to destroy, leaving Proxmox as it is, a resource whose VM is live again by the time the job runs', async () => {
    const vmId = randomUUID();
    await vmRecord(vmId, ['create_failed']);
    await makeVmAtProxmox(driver, vmId, true);
    const orphanId = orphanIdOf(cluster, vmId);
    await scanner().apply(await scanOf([vmId]));
    const accepted = await destroyer.request(orphanId, { actor: 'ingrid', traceId: 't' }, 'ops');
    // Meanwhile the failed create's VM took its resource back.
    await vms.update(vmId, (vm) => adoptVm(vm, { power_state: 'running', addresses: [] }), OPS);

    await runJob(accepted.job_id);
    expect(sim.vmsByHcpId(vmId)).toHaveLength(1);
    const state = (await orphans.load(orphanId)).state!;
    expect(state).toMatchObject({ status: 'destroy_failed', last_error: { code: 'CONFLICT', retryable: false } });
    // The next listing sees the VM live and clears the orphan.
    await refreshReadModel(orphanId);
    const outcome = await scanner().apply(await scanOf([vmId]));
    expect(outcome.cleared).toEqual([orphanId]);
    expect((await orphans.load(orphanId)).state?.status).toBe('cleared');
  });

  it('destroys again under the same job when ops retry a destroy job that failed', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(driver, hcpId, false);
    const orphanId = orphanIdOf(cluster, hcpId);
    await scanner().apply(await scanOf([hcpId]));
    const accepted = await destroyer.request(orphanId, { actor: 'ingrid', traceId: 't' }, 'ops');
    sim.addFault({ kind: 'error', status: 500, message: 'storage busy', method: 'DELETE' });
    try {
      await runJob(accepted.job_id);
    } finally {
      sim.clearFaults();
    }
    expect((await orphans.load(orphanId)).state).toMatchObject({ status: 'destroy_failed', job_id: accepted.job_id });
    expect(sim.vmsByHcpId(hcpId)).toHaveLength(1);

    const job = (await jobs.load(accepted.job_id)).state as JobState;
    await executor.reopen(job, eventContext('olga', 'trace-recover'));
    expect((await orphans.load(orphanId)).state).toMatchObject({ status: 'destroying', job_id: accepted.job_id });
    await runJob(accepted.job_id);
    expect(sim.vmsByHcpId(hcpId)).toEqual([]);
    expect((await orphans.load(orphanId)).state?.status).toBe('destroyed');
    // Settled: a replayed attempt of the same job finds nothing more to do.
    expect(await executor.perform(job, attempt())).toEqual({ kind: 'settled', error: null });
  });

  it('gives a failed create its Proxmox VM back on adopt: the VM leaves error in the power state Proxmox reports', async () => {
    const vmId = randomUUID();
    await vmRecord(vmId, ['create_failed']);
    await makeVmAtProxmox(driver, vmId, false);
    const orphanId = orphanIdOf(cluster, vmId);
    await scanner().apply(await scanOf([vmId]));
    await refreshReadModel(orphanId);
    expect(await queries.get(orphanId)).toMatchObject({ hcp_record: 'failed_create', actions: ['adopt', 'destroy'] });

    const adopted = await adopter.adopt(orphanId, OPS);
    expect(adopted).toMatchObject({ status: 'adopted' });
    const vm = (await vms.load(vmId)).state!;
    expect(vm).toMatchObject({ status: 'stopped', desired_state: 'stopped', last_error: null });
    expect(sim.vmsByHcpId(vmId)).toHaveLength(1);
    // Adopted: a later listing finds its VM live, and nothing more happens to it.
    expect(await scanner().apply(await scanOf([vmId]))).toEqual({ found: [], cleared: [], destroy_jobs: [] });
  });

  it('refuses to adopt an orphan HCP has no VM record for, with CONFLICT saying to destroy it instead', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(driver, hcpId, false);
    const orphanId = orphanIdOf(cluster, hcpId);
    await scanner().apply(await scanOf([hcpId]));
    const refused = await adopter.adopt(orphanId, OPS).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(HcpError);
    expect(refused).toMatchObject({ code: 'CONFLICT', details: { hcp_record: 'absent' } });
    expect((refused as Error).message).toMatch(/destroy it instead/);
    expect((await orphans.load(orphanId)).state?.status).toBe('open');
  });

  it('clears an orphan the provider no longer lists, and finds it again when it is listed again', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(driver, hcpId, false);
    const orphanId = orphanIdOf(cluster, hcpId);
    await scanner().apply(await scanOf([hcpId]));
    await refreshReadModel(orphanId);
    expect(await scanner().apply(await scanOf([]))).toMatchObject({ cleared: expect.arrayContaining([orphanId]) });
    expect((await orphans.load(orphanId)).state?.status).toBe('cleared');
    expect(await scanner().apply(await scanOf([hcpId]))).toMatchObject({ found: [orphanId] });
    expect((await orphans.load(orphanId)).state?.status).toBe('open');
  });

  it('pages the orphan list with limit and cursor, newest found first, and filters it by provider and status', async () => {
    const first = randomUUID();
    const second = randomUUID();
    await makeVmAtProxmox(driver, first, false);
    await makeVmAtProxmox(driver, second, false);
    await scanner().apply(await scanOf([first]));
    await scanner().apply(await scanOf([first, second]));
    await refreshReadModel(orphanIdOf(cluster, first), orphanIdOf(cluster, second));

    const page1 = await queries.list({ cluster_id: cluster }, 1);
    expect(page1.items.map((o) => o.hcp_id)).toEqual([second]);
    expect(page1.next_cursor).not.toBeNull();
    const page2 = await queries.list({ cluster_id: cluster }, 1, page1.next_cursor!);
    expect(page2).toEqual({ items: [expect.objectContaining({ hcp_id: first })], next_cursor: null });
    expect((await queries.list({ cluster_id: cluster, provider_id: 'another-provider' }, 50)).items).toEqual([]);
    expect((await queries.list({ cluster_id: cluster, status: 'cleared' }, 50)).items).toEqual([]);
  });

  it('records nothing when a later listing sees an open orphan unchanged', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(driver, hcpId, false);
    const orphanId = orphanIdOf(cluster, hcpId);
    await scanner().apply(await scanOf([hcpId]));
    await refreshReadModel(orphanId);
    const before = (await orphanEvents(orphanId)).length;
    expect(await scanner().apply(await scanOf([hcpId]))).toEqual({ found: [], cleared: [], destroy_jobs: [] });
    expect(await orphanEvents(orphanId)).toHaveLength(before);
  });

  it('under the destroy policy opens a destroy job for an orphan seen again, as the orphan scanner, and none for a live VM', async () => {
    const orphanHcpId = randomUUID();
    const liveVmId = randomUUID();
    await makeVmAtProxmox(driver, orphanHcpId, false);
    await vmRecord(liveVmId, ['provisioned']);
    await makeVmAtProxmox(driver, liveVmId, true);
    const first = await scanner('destroy').apply(await scanOf([orphanHcpId, liveVmId], new Date(Date.now() - 1_000)));
    // Found, not destroyed yet: its maker gets one interval to record it.
    expect(first).toEqual({ found: [orphanIdOf(cluster, orphanHcpId)], cleared: [], destroy_jobs: [] });
    const outcome = await scanner('destroy').apply(await scanOf([orphanHcpId, liveVmId]));
    expect(outcome.found).toEqual([]);
    expect(outcome.destroy_jobs).toHaveLength(1);
    const job = (await jobs.load(outcome.destroy_jobs[0])).state!;
    expect(job).toMatchObject({ type: 'orphan.destroy', actor: ORPHAN_SCANNER_ACTOR });
    const [requested] = (await orphanEvents(orphanIdOf(cluster, orphanHcpId))).filter(
      (e) => e.event.type === 'OrphanDestroyRequested',
    );
    expect(requested.context.actor).toBe(ORPHAN_SCANNER_ACTOR);
    expect(requested.event.data).toMatchObject({ requested_by: 'policy' });
    await runJob(outcome.destroy_jobs[0]);
    expect(sim.vmsByHcpId(orphanHcpId)).toEqual([]);
    expect(sim.vmsByHcpId(liveVmId)).toHaveLength(1);
  });

  it('opens the job of a destroy request whose command died before admitting it (the job dispatcher)', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(driver, hcpId, false);
    const orphanId = orphanIdOf(cluster, hcpId);
    await scanner().apply(await scanOf([hcpId]));
    const jobId = randomUUID();
    // The orphan's event only, as a command that crashed right after it would leave it.
    await orphans.update(
      orphanId,
      () => [orphanEvent('OrphanDestroyRequested', { job_id: jobId, project_id: '(ops)', requested_by: 'ops' })],
      OPS,
    );
    expect((await jobs.load(jobId)).state).toBeNull();
    const events = (await store.readStream(`orphan-${orphanId}`)).map((r) => codec.decode(r));
    await ds.transaction((tx) => new OrphanJobDispatcherProjection(jobs, queue).apply(events, tx));
    expect((await jobs.load(jobId)).state).toMatchObject({
      type: 'orphan.destroy',
      resource_id: orphanId,
      actor: 'ingrid',
    });
    expect(await queue.existing(ds.manager, [jobId])).toEqual(new Set([jobId]));
  });
});

function call() {
  return { deadline: new Date(Date.now() + 30_000), signal: new AbortController().signal };
}

function attempt(): JobAttempt {
  return {
    worker: 'test-worker',
    deadline: new Date(Date.now() + 30_000),
    signal: new AbortController().signal,
    trace_id: 'trace-job',
    recorded: {},
    record: async () => undefined,
  };
}

function asShape(err: unknown) {
  return (err instanceof HcpError ? err : new HcpError('INTERNAL_ERROR', 'unexpected')).toShape();
}
