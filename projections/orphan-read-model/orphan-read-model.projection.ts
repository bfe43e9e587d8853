import { evolveOrphan, ORPHAN_STREAM_PREFIX, OrphanEvent, OrphanState } from '@hcp/domain';
import { FoldedStateProjection } from '../runner/folded-state.projection';
import { OrphanReadModelRow } from './orphan-read-model.entity';

/** The orphan read model behind `GET /v1/ops/orphans` and the `hcp_orphans` gauge. */
export function orphanReadModelProjection(): FoldedStateProjection<OrphanState, OrphanEvent, OrphanReadModelRow> {
  return new FoldedStateProjection(
    'orphan-read-model',
    ORPHAN_STREAM_PREFIX,
    OrphanReadModelRow,
    evolveOrphan,
    toRow,
    'orphan_read_model',
  );
}

function toRow(state: OrphanState, position: bigint): OrphanReadModelRow {
  return {
    id: state.id,
    provider_id: state.provider_id,
    cluster_id: state.cluster_id,
    hcp_id: state.hcp_id,
    status: state.status,
    hcp_record: state.hcp_record,
    created_at: new Date(state.created_at),
    updated_at: new Date(state.updated_at),
    state,
    position: position.toString(),
  };
}
