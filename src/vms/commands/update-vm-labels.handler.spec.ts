import { createHcpUpcasters, vmStreamId } from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { appendedAfter, givenVm, refusal } from '../../../test/fakes/vm-histories';
import { VmRepository } from '../vm.repository';
import { UpdateVmLabelsCommand, UpdateVmLabelsHandler } from './update-vm-labels.handler';

const ALICE = { actor: 'user:alice', traceId: 'trace-labels' };

function setup() {
  const store = new InMemoryEventStore();
  const codec = new DomainEventCodec(createHcpUpcasters());
  const vms = new VmRepository(store, codec);
  const handler = new UpdateVmLabelsHandler(vms);
  const appendedSince = (position: bigint) => appendedAfter(store, codec, position);
  return { store, vms, handler, appendedSince };
}

describe('UpdateVmLabelsHandler', () => {
  it('replaces the tags, keeps the metadata, and answers the VM as it now is', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running', { tags: { env: 'dev', tier: 'web' }, metadata: { owner: 'team-a' } });
    const before = await store.headPosition();

    const state = await handler.execute(new UpdateVmLabelsCommand('p1', vm.vm_id, { tags: { env: 'prod' } }, ALICE));

    const appended = await appendedSince(before);
    expect(appended.map((e) => [e.streamId, e.event.type, e.event.data])).toEqual([
      [vmStreamId(vm.vm_id), 'VmLabelsUpdated', { tags: { env: 'prod' }, metadata: { owner: 'team-a' } }],
    ]);
    expect(appended[0].context).toMatchObject({ actor: 'user:alice', trace_id: 'trace-labels' });
    expect(state).toMatchObject({
      id: vm.vm_id,
      status: 'running',
      tags: { env: 'prod' },
      metadata: { owner: 'team-a' },
    });
    expect((await vms.load(vm.vm_id)).state).toEqual(state);
  });

  it('replaces the metadata and keeps the tags; an empty map clears', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'stopped', { tags: { env: 'dev' }, metadata: { owner: 'team-a' } });
    const before = await store.headPosition();

    await handler.execute(
      new UpdateVmLabelsCommand('p1', vm.vm_id, { metadata: { owner: 'team-b', cost: '42' } }, ALICE),
    );
    const state = await handler.execute(new UpdateVmLabelsCommand('p1', vm.vm_id, { tags: {} }, ALICE));

    expect((await appendedSince(before)).map((e) => e.event.data)).toEqual([
      { tags: { env: 'dev' }, metadata: { owner: 'team-b', cost: '42' } },
      { tags: {}, metadata: { owner: 'team-b', cost: '42' } },
    ]);
    expect(state).toMatchObject({ status: 'stopped', tags: {}, metadata: { owner: 'team-b', cost: '42' } });
  });

  it('labels a VM while a job is pending on it, without touching the job', async () => {
    const { vms, handler } = setup();
    const vm = await givenVm(vms, 'provisioning');

    const state = await handler.execute(new UpdateVmLabelsCommand('p1', vm.vm_id, { tags: { env: 'qa' } }, ALICE));

    expect(state).toMatchObject({ status: 'provisioning', pending_job_id: vm.job_id, tags: { env: 'qa' } });
  });

  it('refuses a patch with neither tags nor metadata: INVALID_REQUEST, nothing appended', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    expect((await refusal(handler.execute(new UpdateVmLabelsCommand('p1', vm.vm_id, {}, ALICE)))).code).toBe(
      'INVALID_REQUEST',
    );
    expect(await appendedSince(before)).toEqual([]);
  });

  it('rejects labels while deleting', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'deleting');
    const before = await store.headPosition();

    const error = await refusal(
      handler.execute(new UpdateVmLabelsCommand('p1', vm.vm_id, { tags: { env: 'prod' } }, ALICE)),
    );

    expect(error.code).toBe('CONFLICT');
    expect(error.details).toEqual({ status: 'deleting' });
    expect(await appendedSince(before)).toEqual([]);
  });

  it("answers NOT_FOUND for another project's VM, a deleted VM and one that never existed", async () => {
    const { store, vms, handler, appendedSince } = setup();
    const foreign = await givenVm(vms, 'running', { project_id: 'p2' });
    const deleted = await givenVm(vms, 'deleted');
    const before = await store.headPosition();

    for (const vmId of [foreign.vm_id, deleted.vm_id, 'f5b3c1de-0000-4000-8000-000000000000']) {
      expect(
        (await refusal(handler.execute(new UpdateVmLabelsCommand('p1', vmId, { tags: { env: 'prod' } }, ALICE)))).code,
      ).toBe('NOT_FOUND');
    }
    expect(await appendedSince(before)).toEqual([]);
  });
});
