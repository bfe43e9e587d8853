import type { HcpErrorShape, OrphanState } from '@hcp/domain';

/**
 * An orphan as ops see it. Where the resource sits at the provider (node, VMID, ...) stays inside HCP, as
 * every answer's provider details do: `hcp_id` is what ops find it by (the provider resource carries it).
 */
export interface OrphanView {
  id: string;
  provider_id: string;
  cluster_id: string;
  hcp_id: string;
  /** The project of HCP's VM record for `hcp_id`; null when HCP has none. */
  project_id: string | null;
  /** What HCP holds for `hcp_id`: no VM (absent), a deleted VM, or a VM in error from a failed create. */
  hcp_record: OrphanState['hcp_record'];
  power_state: OrphanState['power_state'];
  status: OrphanState['status'];
  /** What ops may do now. */
  actions: Array<'adopt' | 'destroy'>;
  /** The destroy job that owns it or last acted on it. */
  job_id: string | null;
  error: HcpErrorShape | null;
  found_at: string;
  created_at: string;
  updated_at: string;
}

export function presentOrphan(state: OrphanState): OrphanView {
  const waiting = state.status === 'open' || state.status === 'destroy_failed';
  const actions: OrphanView['actions'] = !waiting
    ? []
    : state.hcp_record === 'failed_create'
      ? ['adopt', 'destroy']
      : ['destroy'];
  return {
    id: state.id,
    provider_id: state.provider_id,
    cluster_id: state.cluster_id,
    hcp_id: state.hcp_id,
    project_id: state.project_id,
    hcp_record: state.hcp_record,
    power_state: state.power_state,
    status: state.status,
    actions,
    job_id: state.job_id,
    error: state.last_error,
    found_at: state.found_at,
    created_at: state.created_at,
    updated_at: state.updated_at,
  };
}
