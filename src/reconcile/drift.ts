import { ObservedVm, VmEvent, VmState } from '@hcp/domain';
import type { VmDescription } from '@hcp/providers';

export type DriftKind = 'power_state' | 'addresses' | 'vanished' | 'tags';

/**
 * What the provider's description says of a VM, for `reconcileVm`: null when it has none; undefined
 * when the description cannot settle the power state (paused, half-created, unknown), so nothing is
 * decided on it.
 */
export function observedOf(description: VmDescription | undefined | null): ObservedVm | null | undefined {
  if (!description) return null;
  if (description.power_state !== 'running' && description.power_state !== 'stopped') return undefined;
  return { power_state: description.power_state, addresses: description.addresses };
}

/** The kinds of drift a decision recorded, for `hcp_reconcile_drift_total`. */
export function driftKindsOf(before: VmState, events: readonly VmEvent[]): DriftKind[] {
  const kinds: DriftKind[] = [];
  for (const e of events) {
    if (e.type === 'VmVanished') kinds.push('vanished');
    if (e.type !== 'VmStateObserved') continue;
    if (e.data.power_state !== before.status) kinds.push('power_state');
    if (JSON.stringify(sortedAddresses(e.data.addresses)) !== JSON.stringify(sortedAddresses(before.addresses)))
      kinds.push('addresses');
  }
  return kinds;
}

/**
 * Whether the tenant's tags must be written to the provider: the VM is settled (no job owns it), the
 * driver keeps tags, and what it reports differs from what HCP records.
 */
export function tagsDiffer(state: VmState, description: VmDescription | null | undefined): boolean {
  if (!description?.tags || state.pending_job_id !== null) return false;
  if (state.status !== 'running' && state.status !== 'stopped') return false;
  return !sameTags(description.tags, state.tags);
}

function sameTags(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}

function sortedAddresses(addresses: VmState['addresses']): string[] {
  return addresses.map((a) => `${a.type}|${a.address}|${a.nic}`).sort();
}
