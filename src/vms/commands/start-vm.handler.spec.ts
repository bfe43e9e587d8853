import { HcpError, jobStreamId, vmStreamId } from '@hcp/domain';
import { givenVm, refusal, vmOperationWorld } from '../../../test/fakes/vm-histories';
import { StartVmCommand, StartVmHandler } from './start-vm.handler';

const ALICE = { actor: 'user:alice', traceId: 'trace-start' };

function setup() {
  return vmOperationWorld((requester) => new StartVmHandler(requester));
}

describe('StartVmHandler', () => {
  it('requests the start of a stopped VM and admits its vm.start job', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped');
    const before = await store.headPosition();

    const accepted = await handler.execute(new StartVmCommand('p1', vm.vm_id, ALICE));

    const jobId = accepted.job_id;
    expect(accepted).toEqual({ resource_id: vm.vm_id, job_id: jobId });
    const queued = {
      job_id: jobId,
      project_id: 'p1',
      type: 'vm.start',
      resource_id: vm.vm_id,
      trace_id: 'trace-start',
      actor: 'user:alice',
      params: {},
    };
    const appended = await appendedSince(before);
    expect(appended.map((e) => [e.streamId, e.event.type, e.event.data])).toEqual([
      [vmStreamId(vm.vm_id), 'VmStartRequested', { job_id: jobId, project_id: 'p1' }],
      [jobStreamId(jobId), 'JobQueued', { ...queued, deadline: expect.any(String) }],
    ]);
    expect(appended[0].context).toMatchObject({ actor: 'user:alice', trace_id: 'trace-start' });
    expect(admission.admitted).toEqual([
      {
        queued: { type: 'JobQueued', version: 2, data: queued },
        context: expect.objectContaining({ actor: 'user:alice', trace_id: 'trace-start' }),
      },
    ]);
    expect((await vms.load(vm.vm_id)).state).toMatchObject({
      status: 'starting',
      desired_state: 'running',
      pending_job_id: jobId,
    });
    // Starting needs nothing special from the cluster, so it is not asked.
    expect(clusters.asked).toEqual([]);
  });

  it('starts a VM whose creation failed (status error)', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'error');
    const before = await store.headPosition();

    const { job_id } = await handler.execute(new StartVmCommand('p1', vm.vm_id, ALICE));

    expect((await appendedSince(before)).map((e) => e.event.type)).toEqual(['VmStartRequested', 'JobQueued']);
    expect(admission.queued().map((q) => [q.data.job_id, q.data.type])).toEqual([[job_id, 'vm.start']]);
  });

  it('rejects start while deleting', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'deleting');
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new StartVmCommand('p1', vm.vm_id, ALICE)));

    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ status: 'deleting', allowed_from: ['stopped', 'error'] });
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('rejects start of a VM that is running already', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new StartVmCommand('p1', vm.vm_id, ALICE)))).code).toBe('CONFLICT');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it("answers NOT_FOUND, not FORBIDDEN, for another project's VM and records nothing", async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped', { project_id: 'p2' });
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new StartVmCommand('p1', vm.vm_id, ALICE)));

    expect(error.code).toBe('NOT_FOUND');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('answers NOT_FOUND for a deleted VM and for one that never existed', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const deleted = await givenVm(vms, 'deleted');
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new StartVmCommand('p1', deleted.vm_id, ALICE)))).code).toBe('NOT_FOUND');
    expect(
      (await refusal(handler.execute(new StartVmCommand('p1', 'f5b3c1de-0000-4000-8000-000000000000', ALICE)))).code,
    ).toBe('NOT_FOUND');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('a retried idempotent start finds its job and appends nothing', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped');
    const withKey = { ...ALICE, idempotencyKey: 'start-once' };
    const first = await handler.execute(new StartVmCommand('p1', vm.vm_id, withKey));
    const before = await store.headPosition();

    const retry = await handler.execute(new StartVmCommand('p1', vm.vm_id, { ...withKey, traceId: 'trace-retry' }));

    expect(retry).toEqual(first);
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.queued().map((q) => q.data.job_id)).toEqual([first.job_id]);
  });

  it('keeps the start request and its job when waking the queue fails, and a retry appends nothing', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped');
    const withKey = { ...ALICE, idempotencyKey: 'start-admission-down' };
    admission.failNext(new Error('job queue unavailable'));
    const before = await store.headPosition();

    await expect(handler.execute(new StartVmCommand('p1', vm.vm_id, withKey))).rejects.toThrow('job queue unavailable');
    const requested = await appendedSince(before);
    const jobId = (requested[0].event.data as { job_id: string }).job_id;
    expect(requested.map((e) => [e.streamId, e.event.type])).toEqual([
      [vmStreamId(vm.vm_id), 'VmStartRequested'],
      [jobStreamId(jobId), 'JobQueued'],
    ]);

    const retry = await handler.execute(new StartVmCommand('p1', vm.vm_id, withKey));

    expect(retry.job_id).toBe(jobId);
    expect(await appendedSince(before)).toHaveLength(2);
    expect(admission.admitted).toEqual([]);
  });

  it('refuses a second start with another key while the first is pending', async () => {
    const { vms, admission, handler } = setup();
    const vm = await givenVm(vms, 'stopped');
    await handler.execute(new StartVmCommand('p1', vm.vm_id, { ...ALICE, idempotencyKey: 'a' }));

    const error = await refusal(handler.execute(new StartVmCommand('p1', vm.vm_id, { ...ALICE, idempotencyKey: 'b' })));

    expect(error).toBeInstanceOf(HcpError);
    expect(error.code).toBe('CONFLICT');
    expect(error.details).toMatchObject({ status: 'starting' });
    expect(admission.admitted).toHaveLength(1);
  });
});
