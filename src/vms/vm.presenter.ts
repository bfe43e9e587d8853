import type { VmState } from '@hcp/domain';

const VM_VIEW_FIELDS = [
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

/** The tenant's view of a VM (API.md). Placement and provider references never leave HCP. */
export type VmView = Pick<VmState, (typeof VM_VIEW_FIELDS)[number]>;

export function presentVm(vm: VmState): VmView {
  return Object.fromEntries(VM_VIEW_FIELDS.map((field) => [field, vm[field]])) as VmView;
}
