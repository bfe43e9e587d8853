import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  EventContext,
  HcpError,
  JOB_EVENT_VERSIONS,
  SECURITY_EVENT_VERSIONS,
  UpcasterRegistry,
  VM_EVENT_VERSIONS,
  VmCreateRequestedData,
  VmEvent,
  vmEvent,
  vmStreamId,
} from '@hcp/domain';
import { QUOTA_EVENT_VERSIONS, QuotaEvent, QuotaResources, quotaStreamId } from '@hcp/domain/quota/quota.events';
import { foldQuota, quotaUsageOf } from '@hcp/domain/quota/quota.state-machine';
import { DomainEventCodec, PostgresEventStore, type StreamAppend } from '@hcp/eventstore';
import { QuotaReadModelRow } from '@hcp/projections/quota-read-model/quota-read-model.entity';
import {
  QUOTA_READ_MODEL,
  quotaReadModelProjection,
} from '@hcp/projections/quota-read-model/quota-read-model.projection';
import { Projection } from '@hcp/projections/runner/projection';
import { ProjectionRunner } from '@hcp/projections/runner/projection-runner';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { createDataSource, ENTITIES } from '../../../src/platform/persistence/data-source';
import { migrate } from '../../../src/platform/persistence/migrate';
import { ProjectQuotas1767398400000 } from '../../../src/platform/persistence/migrations/1767398400000-project-quotas';
import { QUOTA_RELEASE, QuotaReleaseProjection } from '../../../src/quotas/quota-release.projection';
import { QuotaRepository } from '../../../src/quotas/quota.repository';
import { QuotaService } from '../../../src/quotas/quota.service';
import { createTestDatabase, TestDatabase } from '../../support/test-database';

const SMALL: QuotaResources = { vcpus: 1, ram_mb: 512, disk_gb: 10 };
const ROOMY = { vcpus: 1000, ram_mb: 1_000_000, disk_gb: 100_000 };

const ctx = (): EventContext => eventContext('test-operator', `trace-${randomUUID()}`);

async function waitFor<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function codeOf(result: PromiseSettledResult<unknown>): string {
  if (result.status === 'fulfilled') return 'OK';
  return result.reason instanceof HcpError ? result.reason.code : `unexpected: ${String(result.reason)}`;
}

describe('project quotas on PostgreSQL', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let codec: DomainEventCodec;
  let repo: QuotaRepository;
  let quotas: QuotaService;
  const runners: ProjectionRunner[] = [];

  const project = () => `quota-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_quota');
    // The quota entity and migration are registered by the app wiring; here they are added explicitly,
    // and the migration runs only if `migrate` did not already apply it.
    const base = createDataSource(db.url, { poolSize: 20 }).options;
    ds = new DataSource({ ...base, entities: [...new Set([...ENTITIES, QuotaReadModelRow])] } as DataSourceOptions);
    await ds.initialize();
    await migrate(ds);
    const [{ t }] = await ds.query(`SELECT to_regclass('project_quotas') AS t`);
    if (!t) {
      const runner = ds.createQueryRunner();
      try {
        await new ProjectQuotas1767398400000().up(runner);
      } finally {
        await runner.release();
      }
    }
    pool = new Pool({ connectionString: db.url, max: 30 });
    pool.on('error', () => undefined); // the database is dropped at the end with connections still closing
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    codec = new DomainEventCodec(
      new UpcasterRegistry({
        ...VM_EVENT_VERSIONS,
        ...JOB_EVENT_VERSIONS,
        ...SECURITY_EVENT_VERSIONS,
        ...QUOTA_EVENT_VERSIONS,
      }),
    );
    repo = new QuotaRepository(store, codec);
    quotas = new QuotaService(repo, ds);
  });

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.stop()));
    await store?.close();
    await pool?.end();
    await ds?.destroy();
    await db?.drop();
  });

  function startProjection(projection: Projection): ProjectionRunner {
    const runner = new ProjectionRunner(ds, store, codec, projection, { batchSize: 200, retryMs: 100 });
    runner.start();
    runners.push(runner);
    return runner;
  }

  async function stopProjection(runner: ProjectionRunner): Promise<void> {
    await runner.stop();
    runners.splice(runners.indexOf(runner), 1);
  }

  /** The stream as stored, in revision order (sorted here too: see QuotaRepository.load). */
  async function streamEvents(projectId: string): Promise<Array<{ event: QuotaEvent; at: string }>> {
    const recorded = (await store.readStream(quotaStreamId(projectId))).sort((a, b) => Number(a.revision - b.revision));
    return recorded.map((r) => codec.decode<QuotaEvent>(r));
  }

  /**
   * One service takes turns per project inside its process; separate services (separate repositories)
   * stand for separate HCP processes, which only optimistic concurrency on the stream keeps apart.
   */
  const topologies: Array<[string, () => (i: number) => QuotaService]> = [
    ['in one process', () => () => quotas],
    [
      'from 20 processes',
      () => {
        const services = Array.from({ length: 20 }, () => new QuotaService(new QuotaRepository(store, codec), ds));
        return (i) => services[i]!;
      },
    ],
  ];

  for (const [where, servicesOf] of topologies) {
    it(`accepts exactly 5 of 20 concurrent reservations against a quota of 5 instances, ${where}`, async () => {
      const serviceFor = servicesOf();
      const p = project();
      await quotas.setLimits(p, { instances: 5, ...ROOMY }, ctx());
      const vmIds = Array.from({ length: 20 }, () => randomUUID());
      const results = await Promise.allSettled(vmIds.map((vmId, i) => serviceFor(i).reserve(p, vmId, SMALL, ctx())));

      const codes = results.map(codeOf);
      expect(codes.filter((c) => c === 'OK')).toHaveLength(5);
      expect(codes.filter((c) => c === 'QUOTA_EXCEEDED')).toHaveLength(15);
      for (const r of results) {
        if (r.status === 'rejected') {
          const err = r.reason as HcpError;
          expect(err.httpStatus).toBe(403);
          expect(err.details).toEqual({ resource: 'instances', limit: 5, used: 5, requested: 1 });
        }
      }

      const { state } = await repo.load(p);
      const accepted = vmIds.filter((_, i) => results[i]!.status === 'fulfilled');
      expect([...state!.reservations.keys()].sort()).toEqual([...accepted].sort());
      expect(state!.usage).toEqual({ instances: 5, vcpus: 5, ram_mb: 2560, disk_gb: 50 });
      const reserved = (await streamEvents(p)).filter((e) => e.event.type === 'QuotaReserved');
      expect(reserved).toHaveLength(5);
    });

    it(`gets every one of 20 concurrent reservations decided without a limit (unlimited project), ${where}`, async () => {
      const serviceFor = servicesOf();
      const p = project();
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => serviceFor(i).reserve(p, randomUUID(), SMALL, ctx())),
      );
      expect(results.map(codeOf)).toEqual(Array(20).fill('OK'));
      expect((await repo.load(p)).state!.usage).toEqual({ instances: 20, vcpus: 20, ram_mb: 10240, disk_gb: 200 });
    });
  }

  it('decides a burst in one project in groups: fewer appends than decisions, each event with its own trace', async () => {
    const counting = new QuotaRepository(store, codec);
    const appends: number[] = [];
    const count = (streams: StreamAppend[]) => {
      for (const { streamId, events } of streams) if (streamId.startsWith('quota-')) appends.push(events.length);
    };
    const appendMany = store.appendMany.bind(store);
    jest.spyOn(store, 'appendMany').mockImplementation(async (streams, options) => {
      count(streams);
      return appendMany(streams, options);
    });
    // The groups hold the quota stream's lock from read to commit: their writes are decided inside it.
    const appendDecided = store.appendDecided.bind(store);
    jest.spyOn(store, 'appendDecided').mockImplementation(async (streamId, from, decide) =>
      appendDecided(streamId, from, (recorded) => {
        const decided = decide(recorded);
        if (decided) count(decided.appends);
        return decided;
      }),
    );
    try {
      const service = new QuotaService(counting, ds);
      const p = project();
      await service.setLimits(p, { instances: 30, ...ROOMY }, ctx());
      appends.length = 0;
      const contexts = Array.from({ length: 60 }, () => ctx());
      const results = await Promise.allSettled(contexts.map((c) => service.reserve(p, randomUUID(), SMALL, c)));
      expect(results.map(codeOf).filter((c) => c === 'OK')).toHaveLength(30);
      expect(results.map(codeOf).filter((c) => c === 'QUOTA_EXCEEDED')).toHaveLength(30);
      expect(appends.reduce((a, b) => a + b, 0)).toBe(30);
      expect(appends.length).toBeLessThan(30);
      const recorded = (await store.readStream(quotaStreamId(p)))
        .map((r) => codec.decode<QuotaEvent>(r))
        .filter((e) => e.event.type === 'QuotaReserved');
      const accepted = contexts.filter((_, i) => results[i].status === 'fulfilled').map((c) => c.trace_id);
      expect(recorded.map((e) => e.context.trace_id).sort()).toEqual(accepted.sort());
    } finally {
      jest.restoreAllMocks();
    }
  });

  it('commits each accepted reservation with its writes alongside in one group; a taken stream drops only its own', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 20, ...ROOMY }, ctx());
    const vmIds = Array.from({ length: 40 }, () => randomUUID());
    // Five of the VMs' streams exist already (another request took the id): their writes cannot go.
    const taken = new Set(vmIds.slice(0, 5));
    for (const vmId of taken)
      await store.append(`${vmStreamId(vmId)}`, [{ id: randomUUID(), type: 'Taken', data: {} }], 'no_stream');
    const marker = (vmId: string) => ({
      appends: [
        {
          streamId: vmStreamId(vmId),
          events: [{ id: randomUUID(), type: 'Alongside', data: { vm_id: vmId } }],
          expected: 'no_stream' as const,
        },
      ],
    });

    const results = await Promise.allSettled(
      vmIds.map((vmId) => quotas.reserve(p, vmId, SMALL, ctx(), () => marker(vmId))),
    );

    const accepted = vmIds.filter((_, i) => results[i]!.status === 'fulfilled');
    expect(results.map(codeOf).filter((c) => c === 'OK')).toHaveLength(20);
    expect(results.map(codeOf).filter((c) => c === 'QUOTA_EXCEEDED')).toHaveLength(20);
    const state = foldQuota(
      (await store.readStream(quotaStreamId(p))).map((r) => ({ event: codec.decode<QuotaEvent>(r).event, at: '' })),
    );
    expect([...(state?.reservations.keys() ?? [])].sort()).toEqual([...accepted].sort());
    for (const [i, vmId] of vmIds.entries()) {
      const result = results[i]!;
      const stream = (await store.readStream(vmStreamId(vmId))).map((e) => e.type);
      if (taken.has(vmId)) expect(stream).toEqual(['Taken']);
      else if (result.status === 'fulfilled') expect(stream).toEqual(['Alongside']);
      else expect(stream).toEqual([]);
      if (result.status === 'fulfilled') expect(result.value.alongside).toBe(!taken.has(vmId));
    }
  });

  it('keeps usage equal to the sum of what was accepted when sizes differ and vCPUs run out first', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 100, vcpus: 20, ram_mb: 1_000_000, disk_gb: 100_000 }, ctx());
    const asks = Array.from({ length: 20 }, (_, i) => ({
      vmId: randomUUID(),
      resources: { vcpus: 1 + (i % 4), ram_mb: 256 * (1 + (i % 3)), disk_gb: 5 + i },
    }));
    const results = await Promise.allSettled(asks.map((a) => quotas.reserve(p, a.vmId, a.resources, ctx())));
    expect(results.map(codeOf).every((c) => c === 'OK' || c === 'QUOTA_EXCEEDED')).toBe(true);

    const accepted = asks.filter((_, i) => results[i]!.status === 'fulfilled');
    const expected = quotaUsageOf(accepted.map((a) => a.resources));
    const { state } = await repo.load(p);
    expect(state!.usage).toEqual(expected);
    expect(state!.usage.vcpus).toBeLessThanOrEqual(20);
    // every refusal was decided against the vCPU limit with the usage of its moment
    for (const r of results) {
      if (r.status === 'rejected') {
        const { resource, limit, used, requested } = (r.reason as HcpError).details as Record<string, number | string>;
        expect(resource).toBe('vcpus');
        expect(limit).toBe(20);
        expect((used as number) + (requested as number)).toBeGreaterThan(20);
      }
    }
  });

  it('treats a retried reservation of the same VM as one reservation, even concurrently', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 2, ...ROOMY }, ctx());
    const vmId = randomUUID();
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => quotas.reserve(p, vmId, SMALL, ctx())));
    expect(results.map(codeOf)).toEqual(Array(10).fill('OK'));
    expect((await repo.load(p)).state!.usage.instances).toBe(1);
  });

  it('frees capacity on release, and releasing twice or releasing an unknown VM changes nothing', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 2, ...ROOMY }, ctx());
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await quotas.reserve(p, a, SMALL, ctx());
    await quotas.reserve(p, b, SMALL, ctx());
    await expect(quotas.reserve(p, c, SMALL, ctx())).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });

    expect(await quotas.release(p, a, ctx())).toBe(true);
    expect(await quotas.release(p, a, ctx())).toBe(false);
    expect(await quotas.release(p, randomUUID(), ctx())).toBe(false);
    await quotas.reserve(p, c, SMALL, ctx());
    expect((await repo.load(p)).state!.usage).toEqual({ instances: 2, vcpus: 2, ram_mb: 1024, disk_gb: 20 });
  });

  it('releases and reserves concurrently without losing a decision', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 10, ...ROOMY }, ctx());
    const held = Array.from({ length: 10 }, () => randomUUID());
    for (const vmId of held) await quotas.reserve(p, vmId, SMALL, ctx());
    const fresh = Array.from({ length: 10 }, () => randomUUID());
    const results = await Promise.allSettled([
      ...held.map((vmId) => quotas.release(p, vmId, ctx())),
      ...fresh.map((vmId) => quotas.reserve(p, vmId, SMALL, ctx())),
    ]);
    expect(results.slice(0, 10).map(codeOf)).toEqual(Array(10).fill('OK'));
    const accepted = fresh.filter((_, i) => results[10 + i]!.status === 'fulfilled');
    const { state } = await repo.load(p);
    expect([...state!.reservations.keys()].sort()).toEqual([...accepted].sort());
    expect(state!.usage.instances).toBe(accepted.length);
  });

  it('lowers limits below usage: nothing is taken away, new reservations are refused', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 5, ...ROOMY }, ctx());
    for (let i = 0; i < 3; i++) await quotas.reserve(p, randomUUID(), SMALL, ctx());
    const view = await quotas.setLimits(p, { instances: 1, vcpus: 1, ram_mb: 512, disk_gb: 10 }, ctx());
    expect(view).toEqual({
      project_id: p,
      limits: { instances: 1, vcpus: 1, ram_mb: 512, disk_gb: 10 },
      usage: { instances: 3, vcpus: 3, ram_mb: 1536, disk_gb: 30 },
    });
    await expect(quotas.reserve(p, randomUUID(), SMALL, ctx())).rejects.toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { resource: 'instances', limit: 1, used: 3, requested: 1 },
    });
  });

  it('folds a stream read back from the store to the same usage, and the read model rebuilds to the same numbers', async () => {
    const p = project();
    await quotas.setLimits(p, { instances: 8, vcpus: 16, ram_mb: 8192, disk_gb: 400 }, ctx());
    const vmIds = Array.from({ length: 20 }, () => randomUUID());
    await Promise.allSettled(
      vmIds.map((vmId, i) => quotas.reserve(p, vmId, { vcpus: 1 + (i % 2), ram_mb: 512, disk_gb: 20 }, ctx())),
    );
    const held = [...(await repo.load(p)).state!.reservations.keys()];
    await Promise.all(held.slice(0, 3).map((vmId) => quotas.release(p, vmId, ctx())));
    const live = (await repo.load(p)).state!;

    const rebuilt = foldQuota(await streamEvents(p));
    expect(rebuilt!.usage).toEqual(live.usage);
    expect(rebuilt!.reservations).toEqual(live.reservations);
    expect(rebuilt!.usage).toEqual(quotaUsageOf(live.reservations.values()));

    // The read model, built live from the stream...
    const view = async () =>
      (await quotas.view(p)).usage.instances === live.usage.instances ? quotas.view(p) : undefined;
    let runner = startProjection(quotaReadModelProjection());
    const projected = await waitFor(view, 'the quota read model');
    expect(projected).toEqual({
      project_id: p,
      limits: { instances: 8, vcpus: 16, ram_mb: 8192, disk_gb: 400 },
      usage: live.usage,
    });
    // ...and rebuilt from position zero after its rows are gone.
    await stopProjection(runner);
    await ds.query(`DELETE FROM project_quotas`);
    await ds.query(`DELETE FROM project_quota_reservations`);
    await ds.query(`DELETE FROM projection_checkpoints WHERE name = $1`, [QUOTA_READ_MODEL]);
    expect(await quotas.view(p)).toEqual({
      project_id: p,
      limits: null,
      usage: { instances: 0, vcpus: 0, ram_mb: 0, disk_gb: 0 },
    });
    runner = startProjection(quotaReadModelProjection());
    expect(await waitFor(view, 'the rebuilt quota read model')).toEqual(projected);
    const [row] = await ds.query(`SELECT limits, usage FROM project_quotas WHERE project_id = $1`, [p]);
    expect(row.usage).toEqual(live.usage);
    const reservations = await ds.query(
      `SELECT vm_id, vcpus::int, ram_mb::int, disk_gb::int FROM project_quota_reservations WHERE project_id = $1`,
      [p],
    );
    expect(Object.fromEntries(reservations.map(({ vm_id, ...held }: { vm_id: string }) => [vm_id, held]))).toEqual(
      live.reservations.toJS(),
    );
    await stopProjection(runner);
  });

  it('views a project that never had a quota as unlimited and unused', async () => {
    expect(await quotas.view('never-seen')).toEqual({
      project_id: 'never-seen',
      limits: null,
      usage: { instances: 0, vcpus: 0, ram_mb: 0, disk_gb: 0 },
    });
  });

  describe('quota-release process manager', () => {
    const createData = (projectId: string, vmId: string, jobId: string): VmCreateRequestedData => ({
      vm_id: vmId,
      project_id: projectId,
      job_id: jobId,
      name: `vm-${vmId.slice(0, 6)}`,
      zone: 'local',
      image_id: randomUUID(),
      flavor_id: randomUUID(),
      resources: SMALL,
      placement: { provider_id: 'prov', cluster_id: 'cl', image_ref: 'tmpl' },
      tags: {},
      metadata: {},
      ssh_keys: [],
      power_on: true,
    });

    async function appendVm(vmId: string, events: VmEvent[]): Promise<void> {
      const current = await store.readStream(vmStreamId(vmId));
      const expected = current.length ? current[current.length - 1]!.revision : 'no_stream';
      await store.append(
        vmStreamId(vmId),
        events.map((e) => codec.encode(e, ctx())),
        expected,
      );
    }

    /** What the create handler does: reserve, then record the VM's creation. */
    async function createVm(projectId: string): Promise<{ vmId: string; jobId: string }> {
      const vmId = randomUUID();
      const jobId = randomUUID();
      await quotas.reserve(projectId, vmId, SMALL, ctx());
      await appendVm(vmId, [vmEvent('VmCreateRequested', createData(projectId, vmId, jobId))]);
      return { vmId, jobId };
    }

    const usageOf = async (projectId: string) => (await repo.load(projectId)).state!.usage.instances;
    const instancesBecome = (projectId: string, n: number) =>
      waitFor(async () => ((await usageOf(projectId)) === n ? n : undefined), `${n} instances in use`);

    it('releases a deleted VM and a VM whose creation failed, never a VM that lives on or failed otherwise', async () => {
      const p = project();
      await quotas.setLimits(p, { instances: 4, ...ROOMY }, ctx());
      const runner = startProjection(new QuotaReleaseProjection(quotas));

      const deleted = await createVm(p);
      const failed = await createVm(p);
      const running = await createVm(p);
      const stopFailed = await createVm(p);
      await expect(quotas.reserve(p, randomUUID(), SMALL, ctx())).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });

      await appendVm(deleted.vmId, [
        vmEvent('VmProvisioned', { job_id: deleted.jobId, power_state: 'running', addresses: [], provider_ref: {} }),
        vmEvent('VmDeleteRequested', { job_id: 'del', project_id: p }),
        vmEvent('VmDeleted', { job_id: 'del' }),
      ]);
      const error = { code: 'PROVIDER_UNAVAILABLE' as const, message: 'down', retryable: true };
      await appendVm(failed.vmId, [
        vmEvent('VmOperationFailed', { job_id: failed.jobId, operation: 'create', error, status_after: 'error' }),
      ]);
      await appendVm(running.vmId, [
        vmEvent('VmProvisioned', { job_id: running.jobId, power_state: 'running', addresses: [], provider_ref: {} }),
      ]);
      await appendVm(stopFailed.vmId, [
        vmEvent('VmProvisioned', { job_id: stopFailed.jobId, power_state: 'running', addresses: [], provider_ref: {} }),
        vmEvent('VmStopRequested', { job_id: 'stop', project_id: p, force: false }),
        vmEvent('VmOperationFailed', { job_id: 'stop', operation: 'stop', error, status_after: 'running' }),
      ]);

      await instancesBecome(p, 2);
      const { state } = await repo.load(p);
      expect([...state!.reservations.keys()].sort()).toEqual([running.vmId, stopFailed.vmId].sort());
      // capacity is back for new VMs
      await quotas.reserve(p, randomUUID(), SMALL, ctx());
      const released = (await streamEvents(p)).filter((e) => e.event.type === 'QuotaReleased');
      expect(released.map((e) => (e.event.data as { vm_id: string }).vm_id).sort()).toEqual(
        [deleted.vmId, failed.vmId].sort(),
      );
      await stopProjection(runner);
    });

    it('releases again a reservation retried after its VM was already gone', async () => {
      const p = project();
      const runner = startProjection(new QuotaReleaseProjection(quotas));
      const vm = await createVm(p);
      await appendVm(vm.vmId, [
        vmEvent('VmOperationFailed', {
          job_id: vm.jobId,
          operation: 'create',
          error: { code: 'PROVIDER_TIMEOUT', message: 't', retryable: true },
          status_after: 'error',
        }),
      ]);
      await instancesBecome(p, 0);
      // the create request is retried with its Idempotency-Key: same VM id, reserved again
      await quotas.reserve(p, vm.vmId, SMALL, ctx());
      await instancesBecome(p, 0);
      await stopProjection(runner);
    });

    it('gives the same usage after the process manager is rebuilt from position zero', async () => {
      const p = project();
      await quotas.setLimits(p, { instances: 10, ...ROOMY }, ctx());
      let runner = startProjection(new QuotaReleaseProjection(quotas));
      const vms = [];
      for (let i = 0; i < 6; i++) vms.push(await createVm(p));
      for (const vm of vms.slice(0, 2)) {
        await appendVm(vm.vmId, [
          vmEvent('VmDeleteRequested', { job_id: `d-${vm.vmId}`, project_id: p }),
          vmEvent('VmDeleted', { job_id: `d-${vm.vmId}` }),
        ]);
      }
      await instancesBecome(p, 4);
      await stopProjection(runner);
      const before = (await repo.load(p)).state!;
      const streamLength = (await store.readStream(quotaStreamId(p))).length;

      await ds.query(`DELETE FROM projection_checkpoints WHERE name = $1`, [QUOTA_RELEASE]);
      runner = startProjection(new QuotaReleaseProjection(quotas));
      const head = await store.headPosition();
      await waitFor(
        async () => (runner.status().position >= head ? true : undefined),
        'the rebuilt process manager to catch up',
      );
      await stopProjection(runner);
      const after = (await repo.load(p)).state!;
      expect(after.usage).toEqual(before.usage);
      expect(after.reservations).toEqual(before.reservations);
      expect((await store.readStream(quotaStreamId(p))).length).toBe(streamLength); // replaying released nothing twice
    });
  });
});

describe('ProjectQuotas1767398400000 migration', () => {
  it('goes down to no quota tables and up again', async () => {
    const fresh = await createTestDatabase('hcp_quota_mig');
    const ds = createDataSource(fresh.url, { poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    const tables = async () =>
      (
        (await ds.query(
          `SELECT table_name FROM information_schema.tables WHERE table_name IN ('project_quotas', 'quota_vm_projects') ORDER BY 1`,
        )) as Array<{ table_name: string }>
      ).map((r) => r.table_name);
    try {
      await migrate(ds);
      const migration = new ProjectQuotas1767398400000();
      if ((await tables()).length === 0) await migration.up(runner);
      expect(await tables()).toEqual(['project_quotas', 'quota_vm_projects']);
      await ds.query(
        `INSERT INTO projection_checkpoints (name, position) VALUES ('quota-read-model', 7), ('vm-read-model', 7)`,
      );
      await migration.down(runner);
      expect(await tables()).toEqual([]);
      // the quota projections start over with their rows; the others keep their positions
      expect(await ds.query(`SELECT name FROM projection_checkpoints ORDER BY name`)).toEqual([
        { name: 'vm-read-model' },
      ]);
      await migration.up(runner);
      expect(await tables()).toEqual(['project_quotas', 'quota_vm_projects']);
    } finally {
      await runner.release();
      await ds.destroy();
      await fresh.drop();
    }
  });
});
