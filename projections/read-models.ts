import { AuditProjection } from './audit/audit.projection';
import { AuditSink, MeteringSink } from './audit/audit-sink';
import { ClusterUsageProjection } from './cluster-usage/cluster-usage.projection';
import { jobReadModelProjection } from './job-read-model/job-read-model.projection';
import { MeteringProjection } from './metering/metering.projection';
import { OpsCatalogProjection } from './ops-catalog/ops-catalog.projection';
import { orphanReadModelProjection } from './orphan-read-model/orphan-read-model.projection';
import { quotaReadModelProjection } from './quota-read-model/quota-read-model.projection';
import { RebuildableProjection } from './runner/projection-rebuild';
import { vmReadModelProjection } from './vm-read-model/vm-read-model.projection';

export interface ReadModelSinks {
  audit: AuditSink;
  metering: MeteringSink;
}

/** Sinks for a rebuild: history is already published, a rebuild only refills the tables. */
export const SILENT_SINKS: ReadModelSinks = {
  audit: { publish: async () => undefined },
  metering: { publish: async () => undefined },
};

/**
 * Every read model (projections whose only effect is their own tables, so ops can rebuild them). Process
 * managers (job dispatcher, quota release) act on the world and are never rebuilt.
 */
export function readModelProjections(sinks: ReadModelSinks): RebuildableProjection[] {
  return [
    vmReadModelProjection(),
    jobReadModelProjection(),
    new OpsCatalogProjection(),
    new ClusterUsageProjection(),
    quotaReadModelProjection(),
    orphanReadModelProjection(),
    new AuditProjection(sinks.audit),
    new MeteringProjection(sinks.metering),
  ];
}
