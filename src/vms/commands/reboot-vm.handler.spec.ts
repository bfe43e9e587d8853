import { jobStreamId, vmStreamId } from '@hcp/domain';
import { FakeClusterCapabilities } from '../../../test/fakes/fake-cluster-capabilities';
import { GIVEN_PLACEMENT, givenVm, refusal, vmOperationWorld } from '../../../test/fakes/vm-histories';
import { RebootVmCommand, RebootVmHandler } from './reboot-vm.handler';

const ALICE = { actor: 'user:alice', traceId: 'trace-reboot' };
const THE_CLUSTER = { provider_id: GIVEN_PLACEMENT.provider_id, cluster_id: GIVEN_PLACEMENT.cluster_id };

function setup() {
  return vmOperationWorld(
    (requester) => new RebootVmHandler(requester),
    new FakeClusterCapabilities().offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, { reboot: true }),
  );
}

describe('RebootVmHandler', () => {
  it('requests the reboot of a running VM where the cluster can reboot and admits vm.reboot with the force asked for', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const accepted = await handler.execute(new RebootVmCommand('p1', vm.vm_id, true, ALICE));

    const jobId = accepted.job_id;
    expect(accepted).toEqual({ resource_id: vm.vm_id, job_id: jobId });
    const queued = {
      job_id: jobId,
      project_id: 'p1',
      type: 'vm.reboot',
      resource_id: vm.vm_id,
      trace_id: 'trace-reboot',
      actor: 'user:alice',
      params: { force: true },
    };
    expect((await appendedSince(before)).map((e) => [e.streamId, e.event.type, e.event.data])).toEqual([
      [vmStreamId(vm.vm_id), 'VmRebootRequested', { job_id: jobId, project_id: 'p1', force: true }],
      [jobStreamId(jobId), 'JobQueued', { ...queued, deadline: expect.any(String) }],
    ]);
    expect(admission.queued().map((q) => q.data)).toEqual([queued]);
    expect(clusters.asked).toEqual([THE_CLUSTER]);
    expect((await vms.load(vm.vm_id)).state).toMatchObject({
      status: 'rebooting',
      desired_state: 'running',
      pending_job_id: jobId,
    });
  });

  it('refuses a reboot, forced or not, where the cluster cannot reboot: FEATURE_NOT_SUPPORTED with details.missing', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    clusters.offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, { reboot: false, graceful_stop: true });
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    for (const force of [false, true]) {
      const error = await refusal(handler.execute(new RebootVmCommand('p1', vm.vm_id, force, ALICE)));
      expect(error.code).toBe('FEATURE_NOT_SUPPORTED');
      expect(error.details).toEqual({ missing: ['reboot'] });
    }
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('rejects reboot of a stopped VM with CONFLICT', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped');
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new RebootVmCommand('p1', vm.vm_id, false, ALICE)));

    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ status: 'stopped', allowed_from: ['running'] });
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it("answers NOT_FOUND for another project's VM, and for a deleted one, without asking the cluster", async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    const foreign = await givenVm(vms, 'running', { project_id: 'p2' });
    const deleted = await givenVm(vms, 'deleted');
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new RebootVmCommand('p1', foreign.vm_id, false, ALICE)))).code).toBe(
      'NOT_FOUND',
    );
    expect((await refusal(handler.execute(new RebootVmCommand('p1', deleted.vm_id, false, ALICE)))).code).toBe(
      'NOT_FOUND',
    );
    expect(
      (await refusal(handler.execute(new RebootVmCommand('p1', 'f5b3c1de-0000-4000-8000-000000000000', false, ALICE))))
        .code,
    ).toBe('NOT_FOUND');

    expect(clusters.asked).toEqual([]);
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('a retried idempotent reboot finds its job and appends nothing', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const withKey = { ...ALICE, idempotencyKey: 'reboot-once' };
    const first = await handler.execute(new RebootVmCommand('p1', vm.vm_id, false, withKey));
    const before = await store.headPosition();

    const retry = await handler.execute(new RebootVmCommand('p1', vm.vm_id, false, withKey));

    expect(retry).toEqual(first);
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.queued().map((q) => [q.data.job_id, q.data.params])).toEqual([[first.job_id, { force: false }]]);
  });
});
