import type { VmState } from '@hcp/domain';

export const VM_VIEW_FIELDS = [
  'id',
  'project_id',
  'name',
  'zone',
  'image_id',
  'flavor_id',
  'status',
  'desired_state',
  'addresses',
  'tags',
  'metadata',
  'created_at',
  'updated_at',
  'last_job_id',
] as const satisfies ReadonlyArray<keyof VmState>;

/**
 * The tenant's view of a VM (API.md). Placement and provider references never leave HCP. The read model
 * keeps it as JSON text beside the state (`view`), so the tenant's reads send it as stored.
 */
export type VmView = Pick<VmState, (typeof VM_VIEW_FIELDS)[number]>;

/**
 * Written out rather than built from VM_VIEW_FIELDS: it runs for every row of every list page, and a
 * literal is several times cheaper than Object.fromEntries. The type keeps the two in step (a field
 * missing or extra here does not compile); the order is that of VM_VIEW_FIELDS, as the JSON shows it.
 */
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
