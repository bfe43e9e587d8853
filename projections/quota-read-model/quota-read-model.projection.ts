import { evolveQuota, evolveQuotaAll, QUOTA_STREAM_PREFIX, QuotaEvent, QuotaState } from '@hcp/domain';
import { FoldedStateProjection } from '../runner/folded-state.projection';
import { QuotaReadModelRow } from './quota-read-model.entity';

export const QUOTA_READ_MODEL = 'quota-read-model';

/** Limits and usage per project behind `GET /v1/projects/{p}/quotas`, folded from the quota streams. */
export function quotaReadModelProjection(): FoldedStateProjection<QuotaState, QuotaEvent, QuotaReadModelRow> {
  return new FoldedStateProjection(
    QUOTA_READ_MODEL,
    QUOTA_STREAM_PREFIX,
    QuotaReadModelRow,
    evolveQuota,
    toRow,
    'project_quotas',
    evolveQuotaAll,
  );
}

function toRow(state: QuotaState, position: bigint): QuotaReadModelRow {
  return {
    id: state.project_id,
    limits: state.limits,
    usage: state.usage,
    state,
    position: position.toString(),
  };
}
