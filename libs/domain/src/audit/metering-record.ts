import { VmEvent, VmResources, VmStateObserved } from '../vm/vm.events';

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
    case 'VmStateObserved':
      return observedRecords(event.data, record);
    case 'VmVanished':
      // Whatever it was metered as, a VM the provider no longer has is not on.
      return event.data.previous_status === 'stopped' ? [] : [record('vm.powered_off')];
    default:
      return [];
  }
}

/**
 * A power state seen at the provider that differs from the recorded one is metered like the operation
 * that would have made it; an adopted VM (a failed create, never allocated) is allocated now.
 */
function observedRecords(
  data: VmStateObserved['data'],
  record: (kind: MeteringKind, suffix?: string) => MeteringRecord,
): MeteringRecord[] {
  const on = data.power_state === 'running';
  if (data.cause === 'adopted')
    return on ? [record('vm.allocated'), record('vm.powered_on', ':on')] : [record('vm.allocated')];
  const wasOn = data.previous_status === 'running';
  if (on === wasOn) return [];
  return [record(on ? 'vm.powered_on' : 'vm.powered_off')];
}
