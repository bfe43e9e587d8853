import { HcpErrorShape } from '../errors';
import { DomainEvent } from '../events/domain-event';

export interface VmAddress {
  type: 'ipv4' | 'ipv6';
  address: string;
  nic: string;
}

export interface VmResources {
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
}

/** Where a VM was placed. Internal: recorded on events, never shown to tenants. */
export interface VmPlacement {
  provider_id: string;
  cluster_id: string;
  image_ref: string;
}

export type VmOperation = 'create' | 'start' | 'stop' | 'reboot' | 'delete';

/** What a VM is: the fields its create request names and its state keeps, declared once for both. */
export interface VmSpec {
  project_id: string;
  name: string;
  zone: string;
  image_id: string;
  flavor_id: string;
  resources: VmResources;
  placement: VmPlacement;
  tags: Record<string, string>;
  metadata: Record<string, string>;
}

export interface VmCreateRequestedData extends VmSpec {
  vm_id: string;
  job_id: string;
  ssh_keys: string[];
  user_data?: string;
  power_on: boolean;
}

export type VmCreateRequested = DomainEvent<'VmCreateRequested', VmCreateRequestedData>;
/** The provider finished building the VM; `power_state` says whether it was powered on. */
export type VmProvisioned = DomainEvent<
  'VmProvisioned',
  { job_id: string; power_state: 'running' | 'stopped'; addresses: VmAddress[]; provider_ref: Record<string, unknown> }
>;
export type VmStartRequested = DomainEvent<'VmStartRequested', { job_id: string; project_id: string }>;
export type VmStarted = DomainEvent<'VmStarted', { job_id: string; addresses: VmAddress[] }>;
export type VmStopRequested = DomainEvent<'VmStopRequested', { job_id: string; project_id: string; force: boolean }>;
export type VmStopped = DomainEvent<'VmStopped', { job_id: string }>;
export type VmRebootRequested = DomainEvent<
  'VmRebootRequested',
  { job_id: string; project_id: string; force: boolean }
>;
export type VmRebooted = DomainEvent<'VmRebooted', { job_id: string; addresses: VmAddress[] }>;
export type VmDeleteRequested = DomainEvent<'VmDeleteRequested', { job_id: string; project_id: string }>;
export type VmDeleted = DomainEvent<'VmDeleted', { job_id: string }>;
/** The job behind an operation failed for good; the VM settles in `status_after`. */
export type VmOperationFailed = DomainEvent<
  'VmOperationFailed',
  { job_id: string; operation: VmOperation; error: HcpErrorShape; status_after: 'running' | 'stopped' | 'error' }
>;
export type VmLabelsUpdated = DomainEvent<
  'VmLabelsUpdated',
  { tags: Record<string, string>; metadata: Record<string, string> }
>;

/**
 * What the provider reported differed from HCP's record: the provider's word wins. `cause` says who
 * looked: the reconcile loop (or an on-demand reconcile), or ops adopting the resource of a failed create.
 */
export type VmStateObserved = DomainEvent<
  'VmStateObserved',
  {
    project_id: string;
    power_state: 'running' | 'stopped';
    addresses: VmAddress[];
    previous_status: VmStatusName;
    cause: 'reconcile' | 'adopted';
  }
>;
/** The provider no longer has the VM HCP recorded as existing. */
export type VmVanished = DomainEvent<
  'VmVanished',
  { project_id: string; previous_status: VmStatusName; reason: 'vanished_at_provider' }
>;

/** The statuses a VM's record can hold (see VmStatus in vm.state-machine). */
export type VmStatusName =
  | 'provisioning'
  | 'starting'
  | 'running'
  | 'stopping'
  | 'stopped'
  | 'rebooting'
  | 'deleting'
  | 'deleted'
  | 'error';

export type VmEvent =
  | VmCreateRequested
  | VmProvisioned
  | VmStartRequested
  | VmStarted
  | VmStopRequested
  | VmStopped
  | VmRebootRequested
  | VmRebooted
  | VmDeleteRequested
  | VmDeleted
  | VmOperationFailed
  | VmLabelsUpdated
  | VmStateObserved
  | VmVanished;

export type VmEventType = VmEvent['type'];

/** Current schema version of every VM event type. */
export const VM_EVENT_VERSIONS: Record<VmEventType, number> = {
  VmCreateRequested: 1,
  VmProvisioned: 1,
  VmStartRequested: 1,
  VmStarted: 1,
  VmStopRequested: 1,
  VmStopped: 1,
  VmRebootRequested: 1,
  VmRebooted: 1,
  VmDeleteRequested: 1,
  VmDeleted: 1,
  VmOperationFailed: 1,
  VmLabelsUpdated: 1,
  VmStateObserved: 1,
  VmVanished: 1,
};

/** Events that ask for provider work; each carries its project and the id of the job that will do it. */
export const VM_REQUEST_EVENTS = [
  'VmCreateRequested',
  'VmStartRequested',
  'VmStopRequested',
  'VmRebootRequested',
  'VmDeleteRequested',
] as const satisfies readonly VmEventType[];

export type VmRequestEvent = Extract<VmEvent, { type: (typeof VM_REQUEST_EVENTS)[number] }>;

export function isVmRequestEvent(event: { type: string }): event is VmRequestEvent {
  return (VM_REQUEST_EVENTS as readonly string[]).includes(event.type);
}

export const OPERATION_OF_REQUEST: Record<VmRequestEvent['type'], VmOperation> = {
  VmCreateRequested: 'create',
  VmStartRequested: 'start',
  VmStopRequested: 'stop',
  VmRebootRequested: 'reboot',
  VmDeleteRequested: 'delete',
};

export const vmStreamId = (vmId: string) => `vm-${vmId}`;
export const VM_STREAM_PREFIX = 'vm-';

export function vmEvent<T extends VmEvent>(type: T['type'], data: T['data']): T {
  return { type, version: VM_EVENT_VERSIONS[type], data } as T;
}
