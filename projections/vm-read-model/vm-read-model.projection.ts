import { evolveVm, VM_STREAM_PREFIX, VmEvent, VmState } from '@hcp/domain';
import { FoldedStateProjection } from '../runner/folded-state.projection';
import { VmReadModelRow } from './vm-read-model.entity';
import { presentVm } from './vm-view';

/** The VM read model behind list and detail queries. */
export function vmReadModelProjection(): FoldedStateProjection<VmState, VmEvent, VmReadModelRow> {
  return new FoldedStateProjection('vm-read-model', VM_STREAM_PREFIX, VmReadModelRow, evolveVm, toRow, 'vm_read_model');
}

function toRow(state: VmState, position: bigint): VmReadModelRow {
  return {
    id: state.id,
    project_id: state.project_id,
    name: state.name,
    zone: state.zone,
    image_id: state.image_id,
    flavor_id: state.flavor_id,
    status: state.status,
    desired_state: state.desired_state,
    addresses: state.addresses,
    tags: state.tags,
    metadata: state.metadata,
    last_job_id: state.last_job_id,
    created_at: new Date(state.created_at),
    updated_at: new Date(state.updated_at),
    state,
    view: JSON.stringify(presentVm(state)),
    position: position.toString(),
  };
}
