import { conflict, HcpErrorShape, invalidRequest, notFound } from '../errors';
import {
  VmAddress,
  VmCreateRequestedData,
  VmEvent,
  VmOperation,
  VmSpec,
  VmStateObserved,
  VmStatusName,
  VmVanished,
  vmEvent,
} from './vm.events';

export type VmStatus = VmStatusName;

export type VmDesiredState = 'running' | 'stopped' | 'deleted';

export interface VmState extends VmSpec {
  id: string;
  status: VmStatus;
  desired_state: VmDesiredState;
  addresses: VmAddress[];
  /** The job that owns the current transition; outcome events from any other job are stale. */
  pending_job_id: string | null;
  last_job_id: string;
  last_error: HcpErrorShape | null;
  /**
   * The operation whose failure left `last_error`, absent once a new operation begins or the provider's
   * state was observed. Tells an errored create (an orphan case) from a failed delete or a vanished VM.
   * Optional: records folded before it existed lack it.
   */
  last_failed_operation?: VmOperation;
  created_at: string;
  updated_at: string;
}

/** Which statuses each operation may start from. Everything else is a CONFLICT. */
const ALLOWED_FROM: Record<Exclude<VmOperation, 'create'>, readonly VmStatus[]> = {
  start: ['stopped', 'error'],
  stop: ['running', 'error'],
  reboot: ['running'],
  delete: ['running', 'stopped', 'error'],
};

const TRANSITIONAL_STATUS: Record<VmOperation, VmStatus> = {
  create: 'provisioning',
  start: 'starting',
  stop: 'stopping',
  reboot: 'rebooting',
  delete: 'deleting',
};

/** Where the VM settles when an operation fails for good (the provider left it as it was). */
const STATUS_AFTER_FAILURE: Record<VmOperation, 'running' | 'stopped' | 'error'> = {
  create: 'error',
  start: 'stopped',
  stop: 'running',
  reboot: 'running',
  delete: 'error',
};

// ---------------------------------------------------------------------------------------------------
// evolve: state + event -> state. Total and pure; used by the aggregate and by the read-model projection.

export function evolveVm(state: VmState | null, event: VmEvent, at: string): VmState | null {
  if (event.type === 'VmCreateRequested') return createdState(event.data, at);
  if (!state) return null; // events of a stream without its creation are ignored, never invented
  const next: VmState = { ...state, updated_at: at };
  switch (event.type) {
    case 'VmProvisioned':
      return settle(next, event.data.job_id, event.data.power_state, { addresses: event.data.addresses });
    case 'VmStartRequested':
      return begin(next, event.data.job_id, 'start', 'running');
    case 'VmStarted':
      return settle(next, event.data.job_id, 'running', { addresses: event.data.addresses });
    case 'VmStopRequested':
      return begin(next, event.data.job_id, 'stop', 'stopped');
    case 'VmStopped':
      return settle(next, event.data.job_id, 'stopped', { addresses: [] });
    case 'VmRebootRequested':
      return begin(next, event.data.job_id, 'reboot', 'running');
    case 'VmRebooted':
      return settle(next, event.data.job_id, 'running', { addresses: event.data.addresses });
    case 'VmDeleteRequested':
      return begin(next, event.data.job_id, 'delete', 'deleted');
    case 'VmDeleted':
      return settle(next, event.data.job_id, 'deleted', { addresses: [] });
    case 'VmOperationFailed':
      return settle(next, event.data.job_id, event.data.status_after, {
        last_error: event.data.error,
        last_failed_operation: event.data.operation,
      });
    case 'VmLabelsUpdated':
      return { ...next, tags: event.data.tags, metadata: event.data.metadata };
    case 'VmStateObserved':
      return observed(state, next, event);
    case 'VmVanished':
      return vanished(state, next, event);
  }
}

/** The code and details a vanished VM's `last_error` carries (NOT_FOUND of the taxonomy). */
export const VANISHED_ERROR: HcpErrorShape = {
  code: 'NOT_FOUND',
  message: 'the VM no longer exists at the provider (removed outside HCP); delete it or ask ops to look',
  details: { reason: 'vanished_at_provider' },
  retryable: false,
};

/**
 * The provider's word wins: the VM is what was seen, and what HCP wants follows it, so HCP never powers
 * a VM back on by itself. An observation never overrides a transition a job owns (the decider only
 * observes VMs without a pending job; this guards replays of a stream written otherwise).
 */
function observed(state: VmState, next: VmState, event: VmStateObserved): VmState {
  if (state.pending_job_id !== null || state.status === 'deleted') return state;
  const { power_state, addresses } = event.data;
  const resolvesError = state.status === 'error';
  const result: VmState = {
    ...next,
    status: power_state,
    desired_state: power_state,
    addresses,
    last_error: resolvesError ? null : state.last_error,
  };
  delete result.last_failed_operation;
  return result;
}

function vanished(state: VmState, next: VmState, _event: VmVanished): VmState {
  if (state.pending_job_id !== null || state.status === 'deleted') return state;
  const result: VmState = { ...next, status: 'error', addresses: [], last_error: VANISHED_ERROR };
  delete result.last_failed_operation;
  return result;
}

/** Whether the VM is in `error` because the provider lost it (not because an operation failed). */
export function isVanished(state: VmState): boolean {
  return (
    state.status === 'error' &&
    state.last_error?.code === 'NOT_FOUND' &&
    state.last_error.details?.reason === 'vanished_at_provider'
  );
}

function createdState(data: VmCreateRequestedData, at: string): VmState {
  return {
    id: data.vm_id,
    project_id: data.project_id,
    name: data.name,
    zone: data.zone,
    image_id: data.image_id,
    flavor_id: data.flavor_id,
    resources: data.resources,
    placement: data.placement,
    status: 'provisioning',
    desired_state: data.power_on ? 'running' : 'stopped',
    addresses: [],
    tags: data.tags,
    metadata: data.metadata,
    pending_job_id: data.job_id,
    last_job_id: data.job_id,
    last_error: null,
    created_at: at,
    updated_at: at,
  };
}

function begin(state: VmState, jobId: string, op: VmOperation, desired: VmDesiredState): VmState {
  const result: VmState = {
    ...state,
    status: TRANSITIONAL_STATUS[op],
    desired_state: desired,
    pending_job_id: jobId,
    last_job_id: jobId,
    last_error: null,
  };
  delete result.last_failed_operation;
  return result;
}

function settle(state: VmState, jobId: string, status: VmStatus, patch: Partial<VmState>): VmState {
  if (state.pending_job_id !== jobId) return state; // a stale outcome never overrides a newer request
  return { ...state, ...patch, status, pending_job_id: null };
}

export function foldVm(events: ReadonlyArray<{ event: VmEvent; at: string }>): VmState | null {
  return events.reduce<VmState | null>((state, { event, at }) => evolveVm(state, event, at), null);
}

// ---------------------------------------------------------------------------------------------------
// decide: state + command -> events, or a CONFLICT / NOT_FOUND value of the taxonomy.

export type VmCommand =
  | { type: 'create'; data: VmCreateRequestedData }
  | { type: 'start'; job_id: string }
  | { type: 'stop'; job_id: string; force: boolean }
  | { type: 'reboot'; job_id: string; force: boolean }
  | { type: 'delete'; job_id: string }
  | { type: 'update_labels'; tags?: Record<string, string>; metadata?: Record<string, string> };

/** Outcomes reported by the job worker; checked against the pending job so replays are harmless. */
export type VmOutcome =
  | {
      type: 'succeeded';
      job_id: string;
      operation: VmOperation;
      power_state?: 'running' | 'stopped';
      addresses: VmAddress[];
      provider_ref?: Record<string, unknown>;
    }
  | { type: 'failed'; job_id: string; operation: VmOperation; error: HcpErrorShape };

export function decideVm(state: VmState | null, command: VmCommand): VmEvent[] {
  if (command.type === 'create') {
    if (state) throw conflict(`VM ${command.data.vm_id} already exists`);
    return [vmEvent('VmCreateRequested', command.data)];
  }
  if (!state || state.status === 'deleted') throw notFound('VM');
  if (command.type === 'update_labels') {
    if (state.status === 'deleting') throw conflict('VM is being deleted', { status: state.status });
    if (!command.tags && !command.metadata) throw invalidRequest('nothing to update: give tags or metadata');
    return [
      vmEvent('VmLabelsUpdated', { tags: command.tags ?? state.tags, metadata: command.metadata ?? state.metadata }),
    ];
  }
  assertAllowed(state, command.type);
  switch (command.type) {
    case 'start':
      return [vmEvent('VmStartRequested', { job_id: command.job_id, project_id: state.project_id })];
    case 'stop':
      return [
        vmEvent('VmStopRequested', { job_id: command.job_id, project_id: state.project_id, force: command.force }),
      ];
    case 'reboot':
      return [
        vmEvent('VmRebootRequested', { job_id: command.job_id, project_id: state.project_id, force: command.force }),
      ];
    case 'delete':
      return [vmEvent('VmDeleteRequested', { job_id: command.job_id, project_id: state.project_id })];
  }
}

function assertAllowed(state: VmState, op: Exclude<VmOperation, 'create'>): void {
  if (!ALLOWED_FROM[op].includes(state.status)) {
    throw conflict(`cannot ${op} a VM that is ${state.status}`, {
      status: state.status,
      allowed_from: [...ALLOWED_FROM[op]],
    });
  }
}

/**
 * The outcome of a job as events. Returns [] when the job is no longer the VM's pending one (a replayed
 * or superseded outcome), so a worker that retries after a crash never corrupts the VM.
 */
export function recordVmOutcome(state: VmState | null, outcome: VmOutcome): VmEvent[] {
  if (!state || state.pending_job_id !== outcome.job_id) return [];
  if (outcome.type === 'failed') {
    return [
      vmEvent('VmOperationFailed', {
        job_id: outcome.job_id,
        operation: outcome.operation,
        error: outcome.error,
        status_after: STATUS_AFTER_FAILURE[outcome.operation],
      }),
    ];
  }
  const { job_id, addresses } = outcome;
  switch (outcome.operation) {
    case 'create':
      return [
        vmEvent('VmProvisioned', {
          job_id,
          power_state: outcome.power_state ?? (state.desired_state === 'running' ? 'running' : 'stopped'),
          addresses,
          provider_ref: outcome.provider_ref ?? {},
        }),
      ];
    case 'start':
      return [vmEvent('VmStarted', { job_id, addresses })];
    case 'stop':
      return [vmEvent('VmStopped', { job_id })];
    case 'reboot':
      return [vmEvent('VmRebooted', { job_id, addresses })];
    case 'delete':
      return [vmEvent('VmDeleted', { job_id })];
  }
}
