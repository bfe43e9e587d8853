import { jobStreamId, recordVmOutcome, vmStreamId, VmStatus } from '@hcp/domain';
import { givenVm, refusal, vmOperationWorld } from '../../../test/fakes/vm-histories';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { DeleteVmCommand, DeleteVmHandler } from './delete-vm.handler';

const ALICE = { actor: 'user:alice', traceId: 'trace-delete' };

function setup() {
  return vmOperationWorld((requester) => new DeleteVmHandler(requester));
}

describe('DeleteVmHandler', () => {
  it('requests the deletion of a running VM and admits its vm.delete job', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const accepted = await handler.execute(new DeleteVmCommand('p1', vm.vm_id, ALICE));

    const jobId = accepted.job_id;
    expect(accepted).toEqual({ resource_id: vm.vm_id, job_id: jobId });
    const queued = {
      job_id: jobId,
      project_id: 'p1',
      type: 'vm.delete',
      resource_id: vm.vm_id,
      trace_id: 'trace-delete',
      actor: 'user:alice',
      params: {},
    };
    const appended = await appendedSince(before);
    expect(appended.map((e) => [e.streamId, e.event.type, e.event.data])).toEqual([
      [vmStreamId(vm.vm_id), 'VmDeleteRequested', { job_id: jobId, project_id: 'p1' }],
      [jobStreamId(jobId), 'JobQueued', { ...queued, deadline: expect.any(String) }],
    ]);
    expect(appended[0].context).toMatchObject({ actor: 'user:alice', trace_id: 'trace-delete' });
    expect(admission.queued().map((q) => q.data)).toEqual([queued]);
    expect((await vms.load(vm.vm_id)).state).toMatchObject({
      status: 'deleting',
      desired_state: 'deleted',
      pending_job_id: jobId,
    });
    // Deleting needs nothing special from the cluster, so it is not asked.
    expect(clusters.asked).toEqual([]);
  });

  for (const status of ['stopped', 'error'] as VmStatus[]) {
    it(`deletes a VM that is ${status}`, async () => {
      const { store, vms, admission, handler, appendedSince } = setup();
      const vm = await givenVm(vms, status);
      const before = await store.headPosition();

      const { job_id } = await handler.execute(new DeleteVmCommand('p1', vm.vm_id, ALICE));

      expect((await appendedSince(before)).map((e) => e.event.type)).toEqual(['VmDeleteRequested', 'JobQueued']);
      expect(admission.queued().map((q) => [q.data.job_id, q.data.type])).toEqual([[job_id, 'vm.delete']]);
    });
  }

  it('rejects delete twice', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    await handler.execute(new DeleteVmCommand('p1', vm.vm_id, ALICE));
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new DeleteVmCommand('p1', vm.vm_id, ALICE)));

    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ status: 'deleting', allowed_from: ['running', 'stopped', 'error'] });
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toHaveLength(1);
  });

  it('rejects delete while the VM is still provisioning', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'provisioning');
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new DeleteVmCommand('p1', vm.vm_id, ALICE)))).code).toBe('CONFLICT');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it("answers NOT_FOUND for a deleted VM and for another project's VM", async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const deleted = await givenVm(vms, 'deleted');
    const foreign = await givenVm(vms, 'running', { project_id: 'p2' });
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new DeleteVmCommand('p1', deleted.vm_id, ALICE)))).code).toBe('NOT_FOUND');
    expect((await refusal(handler.execute(new DeleteVmCommand('p1', foreign.vm_id, ALICE)))).code).toBe('NOT_FOUND');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('a retried idempotent delete answers its job and appends nothing, also once the VM is gone', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const withKey = { ...ALICE, idempotencyKey: 'delete-once' };
    const first = await handler.execute(new DeleteVmCommand('p1', vm.vm_id, withKey));
    const whileDeleting = await store.headPosition();

    expect(await handler.execute(new DeleteVmCommand('p1', vm.vm_id, withKey))).toEqual(first);
    expect(await appendedSince(whileDeleting)).toEqual([]);

    await vms.update(
      vm.vm_id,
      (s) => recordVmOutcome(s, { type: 'succeeded', job_id: first.job_id, operation: 'delete', addresses: [] }),
      eventContext('hcp-worker', 'trace-job'),
    );
    const onceDeleted = await store.headPosition();

    expect(await handler.execute(new DeleteVmCommand('p1', vm.vm_id, withKey))).toEqual(first);
    expect(await appendedSince(onceDeleted)).toEqual([]);
    expect(admission.queued().map((q) => q.data.job_id)).toEqual([first.job_id]);
  });
});
