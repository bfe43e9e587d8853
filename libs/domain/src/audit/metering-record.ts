import { VmEvent, VmResources } from '../vm/vm.events';

export type MeteringKind = 'vm.allocated' | 'vm.powered_on' | 'vm.powered_off' | 'vm.resized' | 'vm.deleted';

/** One change billing needs, as `hcp.metering.v1` carries it. */
export interface MeteringRecord {
  /** The id of the event it comes from (plus a suffix when one event yields several records). */
  event_id: string;
  kind: MeteringKind;
  project_id: string;
  vm_id: string;
  zone: string;
  flavor_id: string;
  resources: VmResources;
  /** When the change took effect on the provider (the outcome event's time). */
  effective_at: string;
}

export interface MeteredVm {
  project_id: string;
  zone: string;
  flavor_id: string;
  resources: VmResources;
}

/**
 * The metering records of a VM event: outcomes only (what the provider did), never requests. Pure, so
 * a rebuild from the log yields the same records with the same ids.
 */
export function meteringRecordsOf(
  event: VmEvent,
  eventId: string,
  vmId: string,
  vm: MeteredVm,
  at: string,
): MeteringRecord[] {
  const record = (kind: MeteringKind, suffix = ''): MeteringRecord => ({
    event_id: `${eventId}${suffix}`,
    kind,
    vm_id: vmId,
    ...vm,
    effective_at: at,
  });
  switch (event.type) {
    case 'VmProvisioned':
      return event.data.power_state === 'running'
        ? [record('vm.allocated'), record('vm.powered_on', ':on')]
        : [record('vm.allocated')];
    case 'VmStarted':
      return [record('vm.powered_on')];
    case 'VmStopped':
      return [record('vm.powered_off')];
    case 'VmDeleted':
      return [record('vm.deleted')];
    default:
      return [];
  }
}
