import { conflict, notFound } from '../errors';
import { VmAddress, VmEvent, vmEvent } from './vm.events';
import { isVanished, VmState, VmStatus } from './vm.state-machine';

/** What the provider reports of a VM: its power state and the addresses its guest agent gave. */
export interface ObservedVm {
  power_state: 'running' | 'stopped';
  addresses: VmAddress[];
}

/** A job owns the VM in these statuses; its outcome, not an observation, settles it. */
const TRANSITIONAL: readonly VmStatus[] = ['provisioning', 'starting', 'stopping', 'rebooting', 'deleting'];

/**
 * The events that bring HCP's record of a VM in line with what the provider reports (`null`: the
 * provider has no such VM). Level-driven: the same record and observation always give the same answer,
 * and none when nothing differs, so a reconcile pass can run at any time and as often as wanted.
 *
 * - Nothing while a job owns the VM (a pending job or a transitional status): the job's outcome settles
 *   it and the next pass looks again. Nothing for a deleted VM.
 * - `running`/`stopped`: a different power state or new addresses become `VmStateObserved`; a missing
 *   VM becomes `VmVanished`.
 * - `error` is decided by what put the VM there:
 *   - a failed create: never reconciled into running/stopped. What the provider holds of it is an orphan
 *     for ops to adopt (`adoptVm`) or destroy;
 *   - vanished: stays so while the provider has nothing; a VM that is back is observed again;
 *   - another failed operation (a delete): the tenant's last word was to delete it, so a VM the provider
 *     still has keeps its error until the delete is retried; one the provider no longer has vanished.
 *
 * Addresses: a running VM reported with none means its guest agent did not answer (yet), not that it
 * lost them, so they are kept; otherwise the reported list replaces the recorded one.
 */
export function reconcileVm(state: VmState | null, observed: ObservedVm | null): VmEvent[] {
  if (!state || state.status === 'deleted') return [];
  if (state.pending_job_id !== null || TRANSITIONAL.includes(state.status)) return [];
  if (state.status === 'error') return reconcileErrored(state, observed);
  if (!observed) return [vanishedEvent(state)];
  const addresses =
    observed.power_state === 'running' && observed.addresses.length === 0 ? state.addresses : observed.addresses;
  if (observed.power_state === state.status && sameAddresses(addresses, state.addresses)) return [];
  return [observedEvent(state, { power_state: observed.power_state, addresses }, 'reconcile')];
}

function reconcileErrored(state: VmState, observed: ObservedVm | null): VmEvent[] {
  if (state.last_failed_operation === 'create') return [];
  if (isVanished(state)) return observed ? [observedEvent(state, observed, 'reconcile')] : [];
  return observed ? [] : [vanishedEvent(state)];
}

/**
 * Ops adopt what the provider built for a create that failed: the VM takes the observed power state and
 * addresses and leaves `error`. CONFLICT for any other VM (its record is not a failed create, or the
 * provider has nothing to adopt); NOT_FOUND when HCP has no such VM.
 */
export function adoptVm(state: VmState | null, observed: ObservedVm | null): VmEvent[] {
  if (!state) throw notFound('VM');
  if (state.status !== 'error' || state.last_failed_operation !== 'create' || state.pending_job_id !== null) {
    throw conflict('only a VM in error after a failed create can adopt its provider resource', {
      status: state.status,
      ...(state.last_failed_operation ? { last_failed_operation: state.last_failed_operation } : {}),
    });
  }
  if (!observed) throw conflict('the provider has no VM to adopt for this id', { status: state.status });
  return [observedEvent(state, observed, 'adopted')];
}

function observedEvent(state: VmState, observed: ObservedVm, cause: 'reconcile' | 'adopted'): VmEvent {
  return vmEvent('VmStateObserved', {
    project_id: state.project_id,
    power_state: observed.power_state,
    addresses: observed.addresses,
    previous_status: state.status,
    cause,
  });
}

function vanishedEvent(state: VmState): VmEvent {
  return vmEvent('VmVanished', {
    project_id: state.project_id,
    previous_status: state.status,
    reason: 'vanished_at_provider',
  });
}

/** Same addresses, whatever order the provider listed them in. */
function sameAddresses(a: readonly VmAddress[], b: readonly VmAddress[]): boolean {
  if (a.length !== b.length) return false;
  const key = (x: VmAddress) => `${x.type}|${x.address}|${x.nic}`;
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.every((k, i) => k === right[i]);
}
