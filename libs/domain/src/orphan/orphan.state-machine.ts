import { conflict, HcpErrorShape, notFound } from '../errors';
import {
  ORPHAN_OPS_PROJECT,
  OrphanDestroyRequester,
  OrphanEvent,
  OrphanFacts,
  OrphanHcpRecord,
  orphanEvent,
} from './orphan.events';

/**
 * - `open`: waits for ops (adopt or destroy); `destroying`: a destroy job owns it;
 * - `destroy_failed`: the job failed for good, ops may destroy again (or adopt);
 * - `destroyed`, `adopted`, `cleared` (gone from the provider, or its VM is live again): resolved. A
 *   later scan that lists it as an orphan again opens it again under the same id.
 */
export type OrphanStatus = 'open' | 'destroying' | 'destroy_failed' | 'destroyed' | 'adopted' | 'cleared';
export const ORPHAN_STATUSES: readonly OrphanStatus[] = [
  'open',
  'destroying',
  'destroy_failed',
  'destroyed',
  'adopted',
  'cleared',
];
/** The statuses that wait for ops or for a job: what `hcp_orphans` counts and the list shows by default. */
export const ORPHAN_UNRESOLVED: readonly OrphanStatus[] = ['open', 'destroying', 'destroy_failed'];
const ACTIONABLE: readonly OrphanStatus[] = ['open', 'destroy_failed'];

export interface OrphanState extends OrphanFacts {
  id: string;
  status: OrphanStatus;
  /** When the scan that (last) found it was taken. */
  found_at: string;
  /** The destroy job that owns it or last acted on it. */
  job_id: string | null;
  last_error: HcpErrorShape | null;
  created_at: string;
  updated_at: string;
}

// ---------------------------------------------------------------------------------------------------
// evolve

export function evolveOrphan(state: OrphanState | null, event: OrphanEvent, at: string): OrphanState | null {
  if (event.type === 'OrphanFound') {
    const { orphan_id, found_at, ...facts } = event.data;
    return {
      ...facts,
      id: orphan_id,
      status: 'open',
      found_at,
      job_id: state?.job_id ?? null,
      last_error: null,
      created_at: state?.created_at ?? at,
      updated_at: at,
    };
  }
  if (!state) return null;
  const next: OrphanState = { ...state, updated_at: at };
  switch (event.type) {
    case 'OrphanObserved': {
      const { observed_at: _, ...facts } = event.data;
      return { ...next, ...facts };
    }
    case 'OrphanAdopted':
      return { ...next, status: 'adopted' };
    case 'OrphanDestroyRequested':
      return { ...next, status: 'destroying', job_id: event.data.job_id, last_error: null };
    case 'OrphanDestroyed':
      return state.job_id === event.data.job_id ? { ...next, status: 'destroyed' } : state;
    case 'OrphanDestroyFailed':
      return state.job_id === event.data.job_id
        ? { ...next, status: 'destroy_failed', last_error: event.data.error }
        : state;
    case 'OrphanCleared':
      return { ...next, status: 'cleared' };
  }
}

export function foldOrphan(events: ReadonlyArray<{ event: OrphanEvent; at: string }>): OrphanState | null {
  return events.reduce<OrphanState | null>((s, { event, at }) => evolveOrphan(s, event, at), null);
}

// ---------------------------------------------------------------------------------------------------
// decide

export type OrphanCommand =
  /** A scan (taken at `scanned_at`) listed the resource and HCP's record makes it an orphan. */
  | { type: 'observe'; orphan_id: string; facts: OrphanFacts; scanned_at: string }
  /** A scan no longer lists it, or lists it with a live VM. */
  | { type: 'clear'; reason: 'not_listed' | 'vm_live'; scanned_at: string }
  /** Ops give it back to the VM of its HCP id, seen at the provider in `power_state` now. */
  | { type: 'adopt'; power_state: 'running' | 'stopped' }
  | { type: 'destroy'; job_id: string; requested_by: OrphanDestroyRequester }
  | { type: 'record_destroyed'; job_id: string }
  | { type: 'record_destroy_failed'; job_id: string; error: HcpErrorShape };

export function decideOrphan(state: OrphanState | null, command: OrphanCommand): OrphanEvent[] {
  switch (command.type) {
    case 'observe':
      return observe(state, command);
    case 'clear':
      if (!state || isOlderThan(command.scanned_at, state) || !ACTIONABLE.includes(state.status)) return [];
      return [orphanEvent('OrphanCleared', { reason: command.reason, observed_at: command.scanned_at })];
    case 'adopt':
      return adopt(state, command.power_state);
    case 'destroy':
      return destroy(state, command.job_id, command.requested_by);
    case 'record_destroyed':
      return owns(state, command.job_id) ? [orphanEvent('OrphanDestroyed', { job_id: command.job_id })] : [];
    case 'record_destroy_failed':
      return owns(state, command.job_id)
        ? [orphanEvent('OrphanDestroyFailed', { job_id: command.job_id, error: command.error })]
        : [];
  }
}

/** The project a destroy job of this orphan belongs to: its VM's, else the reserved ops project. */
export function orphanJobProject(state: Pick<OrphanState, 'project_id'>): string {
  return state.project_id ?? ORPHAN_OPS_PROJECT;
}

function observe(state: OrphanState | null, command: Extract<OrphanCommand, { type: 'observe' }>): OrphanEvent[] {
  const { facts, scanned_at } = command;
  const found = () => [orphanEvent('OrphanFound', { ...facts, orphan_id: command.orphan_id, found_at: scanned_at })];
  if (!state) return found();
  // A listing taken before the orphan's last change (a destroy that finished meanwhile) tells nothing new.
  if (isOlderThan(scanned_at, state)) return [];
  if (state.status === 'destroying') return []; // its job acts on what the provider has now
  if (!ACTIONABLE.includes(state.status)) return found();
  const { project_id, provider_ref, power_state, hcp_record } = facts;
  const changed =
    project_id !== state.project_id ||
    power_state !== state.power_state ||
    hcp_record !== state.hcp_record ||
    JSON.stringify(provider_ref) !== JSON.stringify(state.provider_ref);
  return changed
    ? [orphanEvent('OrphanObserved', { project_id, provider_ref, power_state, hcp_record, observed_at: scanned_at })]
    : [];
}

function adopt(state: OrphanState | null, powerState: 'running' | 'stopped'): OrphanEvent[] {
  if (!state) throw notFound('orphan');
  assertActionable(state, 'adopt');
  if (state.hcp_record !== 'failed_create')
    throw conflict(`${RECORD_WORDS[state.hcp_record]}, so nothing can adopt this resource: destroy it instead`, {
      hcp_record: state.hcp_record,
    });
  return [orphanEvent('OrphanAdopted', { vm_id: state.hcp_id, project_id: state.project_id, power_state: powerState })];
}

function destroy(state: OrphanState | null, jobId: string, requestedBy: OrphanDestroyRequester): OrphanEvent[] {
  if (!state) throw notFound('orphan');
  if (state.status === 'destroying' && state.job_id === jobId) return []; // a retry of the same request
  assertActionable(state, 'destroy');
  return [
    orphanEvent('OrphanDestroyRequested', {
      job_id: jobId,
      project_id: orphanJobProject(state),
      requested_by: requestedBy,
    }),
  ];
}

function assertActionable(state: OrphanState, action: 'adopt' | 'destroy'): void {
  if (!ACTIONABLE.includes(state.status))
    throw conflict(`cannot ${action} an orphan that is ${state.status}`, {
      status: state.status,
      allowed_from: [...ACTIONABLE],
    });
}

const owns = (state: OrphanState | null, jobId: string) => state?.status === 'destroying' && state.job_id === jobId;

const isOlderThan = (scannedAt: string, state: OrphanState) => Date.parse(scannedAt) < Date.parse(state.updated_at);

const RECORD_WORDS: Record<OrphanHcpRecord, string> = {
  absent: 'HCP has no VM with this id',
  deleted: 'the VM with this id is deleted',
  failed_create: 'the VM with this id failed to create',
};
