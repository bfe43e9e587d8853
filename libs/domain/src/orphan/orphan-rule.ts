import type { VmState } from '../vm/vm.state-machine';
import type { OrphanHcpRecord } from './orphan.events';

/**
 * Whether a provider resource carrying HCP id X is an orphan, from HCP's record of VM X: it is when HCP
 * has no VM X, when VM X is deleted, or when VM X is in `error` because its create failed (it never
 * became the VM, so nothing else will ever remove it). Null: VM X owns the resource; that includes a VM
 * in `error` after a failed delete, whose tenant deletes it again.
 */
export function orphanRecordOf(vm: VmState | null): OrphanHcpRecord | null {
  if (!vm) return 'absent';
  if (vm.status === 'deleted') return 'deleted';
  if (vm.status === 'error' && vm.pending_job_id === null && errorIsFailedCreate(vm)) return 'failed_create';
  return null;
}

function errorIsFailedCreate(vm: VmState): boolean {
  // Records folded before `last_failed_operation` existed lack it.
  if (vm.last_failed_operation !== undefined) return vm.last_failed_operation === 'create';
  // Without it: only a failed create or a failed delete settles in `error`, and a delete wanted the VM
  // deleted. A VM the provider lost is in `error` too, but then the provider lists nothing for it.
  return vm.desired_state !== 'deleted' && vm.last_error?.details?.reason !== 'vanished_at_provider';
}
