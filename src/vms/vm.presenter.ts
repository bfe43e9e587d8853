import type { VmState } from '@hcp/domain';

/** The tenant's view of a VM (API.md). Placement and provider references never leave HCP. */
export interface VmView {
  id: string;
  project_id: string;
  name: string;
  zone: string;
  image_id: string;
  flavor_id: string;
  status: string;
  desired_state: string;
  addresses: VmState['addresses'];
  tags: Record<string, string>;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
  last_job_id: string;
}

export function presentVm(vm: VmState): VmView {
  return {
    id: vm.id,
    project_id: vm.project_id,
    name: vm.name,
    zone: vm.zone,
    image_id: vm.image_id,
    flavor_id: vm.flavor_id,
    status: vm.status,
    desired_state: vm.desired_state,
    addresses: vm.addresses,
    tags: vm.tags,
    metadata: vm.metadata,
    created_at: vm.created_at,
    updated_at: vm.updated_at,
    last_job_id: vm.last_job_id,
  };
}
