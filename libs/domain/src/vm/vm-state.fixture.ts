import { VmCreateRequestedData, VmEvent } from './vm.events';
import { decideVm, evolveVm, VmState } from './vm.state-machine';

/*
 * The VM the specs start from, built as HCP builds one: by deciding the create and folding its events.
 * Spec-only: tsconfig.build.json leaves *.fixture.ts out of the build like the specs.
 */

/** When every event of a fixture VM happened. */
export const FIXTURE_AT = '2026-01-01T00:00:00.000Z';

export const vmCreateData = (over: Partial<VmCreateRequestedData> = {}): VmCreateRequestedData => ({
  vm_id: 'vm-1',
  project_id: 'p1',
  job_id: 'job-create',
  name: 'web-1',
  zone: 'local',
  image_id: 'img',
  flavor_id: 'small',
  resources: { vcpus: 1, ram_mb: 512, disk_gb: 10 },
  placement: { provider_id: 'prov', cluster_id: 'cl', image_ref: 'tmpl' },
  tags: {},
  metadata: {},
  ssh_keys: [],
  power_on: true,
  ...over,
});

export function applyVmEvents(state: VmState | null, events: VmEvent[]): VmState | null {
  return events.reduce<VmState | null>((s, e) => evolveVm(s, e, FIXTURE_AT), state);
}

/** The VM once its create is accepted (status provisioning, the create job pending). */
export function requestedVm(over: Partial<VmCreateRequestedData> = {}): VmState {
  return applyVmEvents(null, decideVm(null, { type: 'create', data: vmCreateData(over) })) as VmState;
}
