import { createHcpUpcasters, jobStreamId, quotaStreamId, vmStreamId } from '@hcp/domain';
import { DomainEventCodec } from '@hcp/eventstore';
import { FakeCatalog, FakeCatalogResolver } from '../../../test/fakes/fake-catalog-resolver';
import { FakeJobAdmission } from '../../../test/fakes/fake-job-admission';
import { FaultInjectingEventStore } from '../../../test/fakes/fault-injecting-event-store';
import { unconnectedDataSource } from '../../../test/fakes/unconnected-data-source';
import { appendedAfter, givenVm, refusal } from '../../../test/fakes/vm-histories';
import { idsFor, RequestContext } from '../../http/request/request-context';
import { RequestRecorder } from '../../http/request/request-recorder';
import { JobRepository } from '../../jobs';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { QuotaService } from '../../quotas';
import { QuotaRepository } from '../../quotas/quota.repository';
import { VmRepository } from '../vm.repository';
import { CreateVmCommand, CreateVmHandler, CreateVmInput } from './create-vm.handler';

const ALICE: RequestContext = { actor: 'user:alice', traceId: 'trace-create' };
const SMALL = { vcpus: 1, ram_mb: 1024, disk_gb: 10 };
const CATALOG: FakeCatalog = {
  zones: { 'zone-1': { provider_id: 'prov-1', cluster_id: 'cluster-1', images: { 'ubuntu-24.04': 'tmpl-ubuntu' } } },
  flavors: { small: SMALL, large: { vcpus: 8, ram_mb: 16_384, disk_gb: 100 } },
};
const WEB_1: CreateVmInput = { name: 'web-1', zone: 'zone-1', image_id: 'ubuntu-24.04', flavor_id: 'small' };

function setup() {
  const store = new FaultInjectingEventStore();
  const codec = new DomainEventCodec(createHcpUpcasters());
  const vms = new VmRepository(store, codec);
  const quotas = new QuotaService(new QuotaRepository(store, codec), unconnectedDataSource());
  const catalog = new FakeCatalogResolver(CATALOG);
  const admission = new FakeJobAdmission(new JobRepository(store, codec));
  const handler = new CreateVmHandler(catalog, vms, admission, quotas);
  const appendedSince = async (position: bigint) =>
    (await appendedAfter(store, codec, position)).map((e) => [e.streamId, e.event.type, e.event.data] as const);
  return { store, vms, quotas, catalog, admission, handler, appendedSince };
}

describe('CreateVmHandler', () => {
  it('reserves quota before the VM exists and admits the create job', async () => {
    const { store, catalog, admission, handler, appendedSince } = setup();
    const before = await store.headPosition();

    const accepted = await handler.execute(new CreateVmCommand('p1', WEB_1, ALICE));

    const { resource_id: vmId, job_id: jobId } = accepted;
    const queued = {
      job_id: jobId,
      project_id: 'p1',
      type: 'vm.create',
      resource_id: vmId,
      trace_id: 'trace-create',
      actor: 'user:alice',
      params: {},
    };
    expect(await appendedSince(before)).toEqual([
      [quotaStreamId('p1'), 'QuotaReserved', { project_id: 'p1', vm_id: vmId, resources: SMALL }],
      [
        vmStreamId(vmId),
        'VmCreateRequested',
        {
          vm_id: vmId,
          project_id: 'p1',
          job_id: jobId,
          name: 'web-1',
          zone: 'zone-1',
          image_id: 'ubuntu-24.04',
          flavor_id: 'small',
          resources: SMALL,
          placement: { provider_id: 'prov-1', cluster_id: 'cluster-1', image_ref: 'tmpl-ubuntu' },
          tags: {},
          metadata: {},
          ssh_keys: [],
          power_on: true,
        },
      ],
      [jobStreamId(jobId), 'JobQueued', { ...queued, deadline: expect.any(String) }],
    ]);
    expect(catalog.calls).toEqual([{ zone: 'zone-1', image_id: 'ubuntu-24.04', flavor_id: 'small' }]);
    expect(admission.admitted).toEqual([
      {
        queued: { type: 'JobQueued', version: 2, data: queued },
        context: expect.objectContaining({ actor: 'user:alice', trace_id: 'trace-create' }),
      },
    ]);
  });

  it('records what the tenant chose: labels, ssh keys, user data, and a VM left powered off', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const before = await store.headPosition();
    const input: CreateVmInput = {
      ...WEB_1,
      tags: { env: 'prod' },
      metadata: { owner: 'team-a' },
      ssh_keys: ['ssh-ed25519 AAAA alice'],
      user_data: '#cloud-config\n',
      power_on: false,
    };

    const { resource_id: vmId } = await handler.execute(new CreateVmCommand('p1', input, ALICE));

    const [, created] = await appendedSince(before);
    expect(created[2]).toMatchObject({
      tags: { env: 'prod' },
      metadata: { owner: 'team-a' },
      ssh_keys: ['ssh-ed25519 AAAA alice'],
      user_data: '#cloud-config\n',
      power_on: false,
    });
    expect(await vms.creationRequest(vmId)).toEqual(created[2]);
    expect((await vms.load(vmId)).state).toMatchObject({
      status: 'provisioning',
      desired_state: 'stopped',
      tags: { env: 'prod' },
    });
  });

  it('derives its ids from the Idempotency-Key, per project', async () => {
    const { handler } = setup();
    const key = { ...ALICE, idempotencyKey: 'create-web-1' };

    const inP1 = await handler.execute(new CreateVmCommand('p1', WEB_1, key));
    const inP2 = await handler.execute(new CreateVmCommand('p2', WEB_1, key));

    expect(inP1).toEqual({ resource_id: idsFor(key, 'p1', 'vm'), job_id: idsFor(key, 'p1', 'job') });
    expect(inP2).toEqual({ resource_id: idsFor(key, 'p2', 'vm'), job_id: idsFor(key, 'p2', 'job') });
    expect(inP2.resource_id).not.toBe(inP1.resource_id);
  });

  it('a retry of the same idempotent request records nothing new and admits the same job again', async () => {
    const { store, admission, handler, appendedSince } = setup();
    const key = { ...ALICE, idempotencyKey: 'create-web-1' };
    const first = await handler.execute(new CreateVmCommand('p1', WEB_1, key));
    const before = await store.headPosition();

    const retry = await handler.execute(new CreateVmCommand('p1', WEB_1, { ...key, traceId: 'trace-retry' }));

    expect(retry).toEqual(first);
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.queued().map((q) => [q.data.job_id, q.data.resource_id])).toEqual([
      [first.job_id, first.resource_id],
      [first.job_id, first.resource_id],
    ]);
  });

  it('refuses what would go over the quota with QUOTA_EXCEEDED and leaves nothing behind', async () => {
    const { store, quotas, admission, handler, appendedSince } = setup();
    await quotas.setLimits(
      'p1',
      { instances: 1, vcpus: 4, ram_mb: 65_536, disk_gb: 500 },
      eventContext('ops:bob', 'trace-limits'),
    );
    const before = await store.headPosition();

    const tooBig = await refusal(handler.execute(new CreateVmCommand('p1', { ...WEB_1, flavor_id: 'large' }, ALICE)));
    await handler.execute(new CreateVmCommand('p1', WEB_1, ALICE));
    const oneTooMany = await refusal(handler.execute(new CreateVmCommand('p1', { ...WEB_1, name: 'web-2' }, ALICE)));

    expect(tooBig.code).toBe('QUOTA_EXCEEDED');
    expect(tooBig.details).toEqual({ resource: 'vcpus', limit: 4, used: 0, requested: 8 });
    expect(oneTooMany.code).toBe('QUOTA_EXCEEDED');
    expect(oneTooMany.details).toEqual({ resource: 'instances', limit: 1, used: 1, requested: 1 });
    // Only the one VM that fitted left anything behind.
    expect((await appendedSince(before)).map(([stream, type]) => [stream.split('-')[0], type])).toEqual([
      ['quota', 'QuotaReserved'],
      ['vm', 'VmCreateRequested'],
      ['job', 'JobQueued'],
    ]);
    expect(admission.admitted).toHaveLength(1);
  });

  it('rejects an unknown flavor with INVALID_REQUEST before reserving anything', async () => {
    const { store, admission, handler, appendedSince } = setup();
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new CreateVmCommand('p1', { ...WEB_1, flavor_id: 'huge' }, ALICE)));

    expect(error.code).toBe('INVALID_REQUEST');
    expect(error.details).toEqual({ fields: [{ field: 'flavor_id', problems: ['unknown flavor_id'] }] });
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it("commits the request's record with the create, right after the reservation, and marks it committed", async () => {
    const { store, handler, appendedSince } = setup();
    const recorder = new RequestRecorder(store, new DomainEventCodec(createHcpUpcasters()));
    const carried = recorder.carry(
      {
        actor: 'user:alice',
        method: 'POST',
        route: '/v1/projects/:project_id/vms',
        scope: 'tenant',
        params: { project_id: 'p1' },
      },
      'trace-create',
    );
    const before = await store.headPosition();

    const accepted = await handler.execute(new CreateVmCommand('p1', WEB_1, { ...ALICE, carried }));

    expect((await appendedSince(before)).map(([stream, type]) => [stream, type])).toEqual([
      [quotaStreamId('p1'), 'QuotaReserved'],
      [carried.request.streamId, 'RequestReceived'],
      [carried.request.streamId, 'RequestAnswered'],
      [vmStreamId(accepted.resource_id), 'VmCreateRequested'],
      [jobStreamId(accepted.job_id), 'JobQueued'],
    ]);
    expect(carried.committedJobId).toBe(accepted.job_id);
  });

  it('leaves nothing behind, reservation included, when the commit of the create fails', async () => {
    const { store, admission, handler, appendedSince } = setup();
    const storeDown = new Error('connection reset');
    store.failAppendsTo('vm-', storeDown);
    const before = await store.headPosition();

    await expect(handler.execute(new CreateVmCommand('p1', WEB_1, { ...ALICE, idempotencyKey: 'k' }))).rejects.toBe(
      storeDown,
    );

    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('commits the reservation, the VM request and the job together, so a lost answer loses none of them', async () => {
    const { store, admission, handler, appendedSince } = setup();
    const key = { ...ALICE, idempotencyKey: 'create-answer-lost' };
    store.failAppendsTo('vm-', new Error('answer lost'), 'after_write');
    const before = await store.headPosition();

    await expect(handler.execute(new CreateVmCommand('p1', WEB_1, key))).rejects.toThrow('answer lost');
    const recorded = await appendedSince(before);

    const vmId = idsFor(key, 'p1', 'vm');
    const jobId = idsFor(key, 'p1', 'job');
    expect(recorded.map(([stream, type]) => [stream, type])).toEqual([
      [quotaStreamId('p1'), 'QuotaReserved'],
      [vmStreamId(vmId), 'VmCreateRequested'],
      [jobStreamId(jobId), 'JobQueued'],
    ]);
    expect(admission.admitted).toEqual([]);
  });

  it('keeps the reservation, the VM request and its job when waking the queue fails; the retry admits it', async () => {
    const { store, admission, handler, appendedSince } = setup();
    const key = { ...ALICE, idempotencyKey: 'create-admission-down' };
    admission.failNext(new Error('job queue unavailable'));
    const before = await store.headPosition();

    await expect(handler.execute(new CreateVmCommand('p1', WEB_1, key))).rejects.toThrow('job queue unavailable');
    const recorded = await appendedSince(before);
    const retry = await handler.execute(new CreateVmCommand('p1', WEB_1, key));

    expect(recorded.map(([stream, type]) => [stream, type])).toEqual([
      [quotaStreamId('p1'), 'QuotaReserved'],
      [vmStreamId(retry.resource_id), 'VmCreateRequested'],
      [jobStreamId(retry.job_id), 'JobQueued'],
    ]);
    expect(await appendedSince(before)).toHaveLength(recorded.length);
    expect(admission.queued().map((q) => q.data.job_id)).toEqual([retry.job_id]);
  });

  it("answers CONFLICT and keeps the VM's reservation when its id was recorded by another request", async () => {
    const { store, vms, quotas, admission, handler, appendedSince } = setup();
    const key = { ...ALICE, idempotencyKey: 'taken' };
    const other = await givenVm(vms, 'running', { vm_id: idsFor(key, 'p1', 'vm'), resources: SMALL });
    await quotas.reserve('p1', other.vm_id, SMALL, eventContext('user:given', 'trace-given'));
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new CreateVmCommand('p1', WEB_1, key)));

    expect(error.code).toBe('CONFLICT');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });
});
