import { randomUUID } from 'node:crypto';
import {
  createHcpUpcasters,
  decideVm,
  foldVm,
  HcpError,
  recordVmOutcome,
  VmCreateRequestedData,
  VmEvent,
  VmState,
  VmStatus,
} from '@hcp/domain';
import { DecodedEvent, DomainEventCodec, EventStore, InMemoryEventStore } from '@hcp/eventstore';
import { JobRepository } from '../../src/jobs';
import { eventContext } from '../../src/platform/event-sourcing/event-context';
import { VmRepository } from '../../src/vms';
import { VmOperationRequester } from '../../src/vms/commands/vm-operation-requester';
import { FakeClusterCapabilities } from './fake-cluster-capabilities';
import { FakeJobAdmission } from './fake-job-admission';

/** Where the VMs of these histories live. */
export const GIVEN_PLACEMENT = { provider_id: 'prov-1', cluster_id: 'cluster-1', image_ref: 'tmpl-ubuntu' } as const;

/** A create request as CreateVmHandler records it; a fresh VM id each time unless given. */
export function vmCreateRequest(over: Partial<VmCreateRequestedData> = {}): VmCreateRequestedData {
  return {
    vm_id: randomUUID(),
    project_id: 'p1',
    job_id: randomUUID(),
    name: 'web-1',
    zone: 'zone-1',
    image_id: 'ubuntu-24.04',
    flavor_id: 'small',
    resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 },
    placement: { ...GIVEN_PLACEMENT },
    tags: { env: 'dev' },
    metadata: { owner: 'team-a' },
    ssh_keys: [],
    power_on: true,
    ...over,
  };
}

const AT = '2026-01-01T00:00:00.000Z';

/** Appends what `next` decides on the VM the events so far give. */
function then(events: VmEvent[], next: (state: VmState | null) => VmEvent[]): VmEvent[] {
  return [...events, ...next(foldVm(events.map((event) => ({ event, at: AT }))))];
}

/**
 * The events that take a VM from its create request to `status`, each decided by the real state
 * machine (decideVm, recordVmOutcome), the jobs named `given-<operation>`.
 */
export function vmHistory(data: VmCreateRequestedData, status: VmStatus): VmEvent[] {
  const created = decideVm(null, { type: 'create', data });
  const succeeded =
    (operation: 'create' | 'start' | 'stop' | 'reboot' | 'delete', job_id: string) => (s: VmState | null) =>
      recordVmOutcome(s, {
        type: 'succeeded',
        job_id,
        operation,
        addresses: [],
        ...(operation === 'create' ? { power_state: 'running' as const } : {}),
      });
  const running = then(created, succeeded('create', data.job_id));
  const stopped = then(
    then(running, (s) => decideVm(s, { type: 'stop', job_id: 'given-stop', force: false })),
    succeeded('stop', 'given-stop'),
  );
  const deleting = then(running, (s) => decideVm(s, { type: 'delete', job_id: 'given-delete' }));
  switch (status) {
    case 'provisioning':
      return created;
    case 'running':
      return running;
    case 'stopped':
      return stopped;
    case 'starting':
      return then(stopped, (s) => decideVm(s, { type: 'start', job_id: 'given-start' }));
    case 'stopping':
      return then(running, (s) => decideVm(s, { type: 'stop', job_id: 'given-stop', force: false }));
    case 'rebooting':
      return then(running, (s) => decideVm(s, { type: 'reboot', job_id: 'given-reboot', force: false }));
    case 'deleting':
      return deleting;
    case 'deleted':
      return then(deleting, succeeded('delete', 'given-delete'));
    case 'error':
      return then(created, (s) =>
        recordVmOutcome(s, {
          type: 'failed',
          job_id: data.job_id,
          operation: 'create',
          error: { code: 'PROVIDER_UNAVAILABLE', message: 'given', retryable: false },
        }),
      );
  }
}

/** GIVEN: a VM in `status`, its history appended through the real repository. Returns its create request. */
export async function givenVm(
  vms: VmRepository,
  status: VmStatus,
  over: Partial<VmCreateRequestedData> = {},
): Promise<VmCreateRequestedData> {
  const data = vmCreateRequest(over);
  const loaded = await vms.append(
    { id: data.vm_id, state: null, revision: 'no_stream' },
    vmHistory(data, status),
    eventContext('user:given', 'trace-given'),
  );
  if (loaded.state?.status !== status) throw new Error(`vmHistory reached ${loaded.state?.status}, not ${status}`);
  return data;
}

/** THEN: every event appended to any stream after `position` (a `store.headPosition()` taken before the WHEN), decoded, in order. */
export async function appendedAfter(
  store: EventStore,
  codec: DomainEventCodec,
  position: bigint,
): Promise<DecodedEvent[]> {
  return (await store.readAll(position, 10_000)).map((r) => codec.decode(r));
}

/** The stream's events as [type, data] pairs, in order. */
export async function streamOf(
  store: EventStore,
  codec: DomainEventCodec,
  streamId: string,
): Promise<Array<[string, unknown]>> {
  return (await store.readStream(streamId)).map((r) => {
    const { event } = codec.decode(r);
    return [event.type, event.data];
  });
}

/** The HcpError `promise` rejects with; fails the spec when it resolves or rejects with anything else. */
export async function refusal(promise: Promise<unknown>): Promise<HcpError> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome))
    throw new Error(`expected an HcpError, but it resolved with ${JSON.stringify(outcome.resolved)}`);
  if (!(outcome.error instanceof HcpError)) throw outcome.error;
  return outcome.error;
}

/**
 * The world of the start, stop, reboot and delete specs: the real VmOperationRequester over an in-memory
 * store, with fake job admission and cluster capabilities; `handlerOf` builds the handler under test.
 */
export function vmOperationWorld<H>(
  handlerOf: (requester: VmOperationRequester) => H,
  clusters: FakeClusterCapabilities = new FakeClusterCapabilities(),
) {
  const store = new InMemoryEventStore();
  const codec = new DomainEventCodec(createHcpUpcasters());
  const vms = new VmRepository(store, codec);
  const jobs = new JobRepository(store, codec);
  const admission = new FakeJobAdmission(jobs);
  const requester = new VmOperationRequester(vms, admission, jobs, clusters);
  const handler = handlerOf(requester);
  const appendedSince = (position: bigint) => appendedAfter(store, codec, position);
  return { store, vms, admission, clusters, requester, handler, appendedSince };
}
