import { HcpError, jobStreamId, recordVmOutcome, vmStreamId } from '@hcp/domain';
import { FakeClusterCapabilities } from '../../../test/fakes/fake-cluster-capabilities';
import { GIVEN_PLACEMENT, givenVm, refusal, vmOperationWorld } from '../../../test/fakes/vm-histories';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { DeleteVmCommand, DeleteVmHandler } from './delete-vm.handler';
import { StartVmCommand, StartVmHandler } from './start-vm.handler';
import { StopVmCommand, StopVmHandler } from './stop-vm.handler';

const ALICE = { actor: 'user:alice', traceId: 'trace-stop' };
const THE_CLUSTER = { provider_id: GIVEN_PLACEMENT.provider_id, cluster_id: GIVEN_PLACEMENT.cluster_id };

function setup() {
  return vmOperationWorld(
    (requester) => new StopVmHandler(requester),
    new FakeClusterCapabilities().offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, { graceful_stop: true }),
  );
}

describe('StopVmHandler', () => {
  it('requests a graceful stop where the cluster offers one and admits vm.stop with force false', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const accepted = await handler.execute(new StopVmCommand('p1', vm.vm_id, false, ALICE));

    const jobId = accepted.job_id;
    expect(accepted).toEqual({ resource_id: vm.vm_id, job_id: jobId });
    const queued = {
      job_id: jobId,
      project_id: 'p1',
      type: 'vm.stop',
      resource_id: vm.vm_id,
      trace_id: 'trace-stop',
      actor: 'user:alice',
      params: { force: false },
    };
    expect((await appendedSince(before)).map((e) => [e.streamId, e.event.type, e.event.data])).toEqual([
      [vmStreamId(vm.vm_id), 'VmStopRequested', { job_id: jobId, project_id: 'p1', force: false }],
      [jobStreamId(jobId), 'JobQueued', { ...queued, deadline: expect.any(String) }],
    ]);
    expect(admission.queued().map((q) => q.data)).toEqual([queued]);
    expect(clusters.asked).toEqual([THE_CLUSTER]);
    expect((await vms.load(vm.vm_id)).state).toMatchObject({
      status: 'stopping',
      desired_state: 'stopped',
      pending_job_id: jobId,
    });
  });

  it('refuses a graceful stop where the cluster cannot stop gracefully: FEATURE_NOT_SUPPORTED naming graceful_stop', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    clusters.offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, { graceful_stop: false, reboot: true });
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new StopVmCommand('p1', vm.vm_id, false, ALICE)));

    expect(error.code).toBe('FEATURE_NOT_SUPPORTED');
    expect(error.details).toEqual({ missing: ['graceful_stop'] });
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('stops by force where the cluster cannot stop gracefully, without asking the cluster', async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    clusters.offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, {});
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const { job_id } = await handler.execute(new StopVmCommand('p1', vm.vm_id, true, ALICE));

    expect((await appendedSince(before)).map((e) => [e.event.type, e.event.data])).toEqual([
      ['VmStopRequested', { job_id, project_id: 'p1', force: true }],
      ['JobQueued', expect.objectContaining({ job_id, type: 'vm.stop', params: { force: true } })],
    ]);
    expect(admission.queued().map((q) => q.data.params)).toEqual([{ force: true }]);
    expect(clusters.asked).toEqual([]);
  });

  it('rejects stop of a stopped VM with CONFLICT', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped');
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new StopVmCommand('p1', vm.vm_id, false, ALICE)));

    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ status: 'stopped', allowed_from: ['running', 'error'] });
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it("answers NOT_FOUND for another project's VM without asking its cluster what it can do", async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running', { project_id: 'p2' });
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new StopVmCommand('p1', vm.vm_id, false, ALICE)))).code).toBe('NOT_FOUND');
    expect((await refusal(handler.execute(new StopVmCommand('p1', vm.vm_id, true, ALICE)))).code).toBe('NOT_FOUND');

    expect(clusters.asked).toEqual([]);
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it("answers PROVIDER_UNAVAILABLE when the VM's provider is gone, and records nothing", async () => {
    const { store, vms, admission, clusters, handler, appendedSince } = setup();
    clusters.failWith(
      new HcpError('PROVIDER_UNAVAILABLE', "the VM's provider is not registered any more", undefined, false),
    );
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new StopVmCommand('p1', vm.vm_id, false, ALICE)));

    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.admitted).toEqual([]);
  });

  it('a retried idempotent stop finds its job and appends nothing, even after the job finished', async () => {
    const { store, vms, admission, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const withKey = { ...ALICE, idempotencyKey: 'stop-once' };
    const first = await handler.execute(new StopVmCommand('p1', vm.vm_id, false, withKey));
    await vms.update(
      vm.vm_id,
      (s) => recordVmOutcome(s, { type: 'succeeded', job_id: first.job_id, operation: 'stop', addresses: [] }),
      eventContext('hcp-worker', 'trace-job'),
    );
    const before = await store.headPosition();

    const retry = await handler.execute(new StopVmCommand('p1', vm.vm_id, false, withKey));

    expect(retry).toEqual(first);
    expect(await appendedSince(before)).toEqual([]);
    expect(admission.queued().map((q) => q.data.job_id)).toEqual([first.job_id]);
    expect((await vms.load(vm.vm_id)).state).toMatchObject({ status: 'stopped', pending_job_id: null });
  });

  it("a stop retried after a later start was accepted answers the stop's job and leaves the start pending", async () => {
    const { store, vms, requester, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const withKey = { ...ALICE, idempotencyKey: 'stop-then-late-retry' };
    const stop = await handler.execute(new StopVmCommand('p1', vm.vm_id, true, withKey));
    await vms.update(
      vm.vm_id,
      (s) => recordVmOutcome(s, { type: 'succeeded', job_id: stop.job_id, operation: 'stop', addresses: [] }),
      eventContext('hcp-worker', 'trace-job'),
    );
    const start = await new StartVmHandler(requester).execute(new StartVmCommand('p1', vm.vm_id, ALICE));
    const before = await store.headPosition();

    const retry = await handler.execute(new StopVmCommand('p1', vm.vm_id, true, withKey));

    expect(retry).toEqual(stop);
    expect(await appendedSince(before)).toEqual([]);
    expect((await vms.load(vm.vm_id)).state).toMatchObject({ status: 'starting', pending_job_id: start.job_id });
  });

  it('refuses a key first used for a stop of another VM with CONFLICT, recording nothing', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const first = await givenVm(vms, 'running');
    const second = await givenVm(vms, 'running');
    const withKey = { ...ALICE, idempotencyKey: 'one-key-two-vms' };
    await handler.execute(new StopVmCommand('p1', first.vm_id, true, withKey));
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new StopVmCommand('p1', second.vm_id, true, withKey)));

    expect(error.code).toBe('CONFLICT');
    expect(await appendedSince(before)).toEqual([]);
    expect((await vms.load(second.vm_id)).state).toMatchObject({ status: 'running', pending_job_id: null });
  });

  it('a retried graceful stop is answered with its job even after the cluster stopped offering graceful stops', async () => {
    const { store, vms, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const withKey = { ...ALICE, idempotencyKey: 'graceful-then-capability-gone' };
    const first = await handler.execute(new StopVmCommand('p1', vm.vm_id, false, withKey));
    clusters.offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, {});
    const before = await store.headPosition();

    const retry = await handler.execute(new StopVmCommand('p1', vm.vm_id, false, withKey));

    expect(retry).toEqual(first);
    expect(await appendedSince(before)).toEqual([]);
  });

  it('of a stop and a delete racing on one running VM, one is admitted and the other refused with CONFLICT', async () => {
    const { store, vms, admission, requester, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const outcomes = await Promise.allSettled([
      handler.execute(new StopVmCommand('p1', vm.vm_id, true, ALICE)),
      new DeleteVmHandler(requester).execute(new DeleteVmCommand('p1', vm.vm_id, ALICE)),
    ]);

    const accepted = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(accepted).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(HcpError);
    expect((refused[0] as HcpError).code).toBe('CONFLICT');
    const appended = await appendedSince(before);
    expect(appended.map((e) => e.event.type)).toEqual([
      expect.stringMatching(/^Vm(Stop|Delete)Requested$/),
      'JobQueued',
    ]);
    expect(admission.admitted).toHaveLength(1);
  });
});
