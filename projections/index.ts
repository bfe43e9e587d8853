// What the application may use of the projections: the runner, the read models and their row types.
// Everything else in this folder is a projection's own business.
export type { OneStatementBatch, Projection } from './runner/projection';
export {
  ProjectionRunner,
  type ProjectionRunnerOptions,
  type ProjectionStatus,
  restartBackoffMs,
} from './runner/projection-runner';
export { ProjectionLocks } from './runner/projection-locks';
export {
  DEAD_LETTER_STATUSES,
  retryDeadLetter,
  skipDeadLetter,
  type DeadLetter,
  type DeadLetterRecorded,
  type DeadLetterStatus,
  type RetryOutcome,
} from './runner/dead-letters';
export { ProjectionCheckpoint } from './runner/projection-checkpoint.entity';
export { rebuildProjection, type RebuildResult, type RebuildableProjection } from './runner/projection-rebuild';
export { readModelProjections, SILENT_SINKS, type ReadModelSinks } from './read-models';
export { publisherSinks, type AuditSink, type MeteringSink } from './audit/audit-sink';
export { VmReadModelRow } from './vm-read-model/vm-read-model.entity';
export { presentVm, VM_VIEW_FIELDS, type VmView } from './vm-read-model/vm-view';
export { JobReadModelRow } from './job-read-model/job-read-model.entity';
export { OpsResourceRow } from './ops-catalog/ops-resource.entity';
export { QuotaReadModelRow } from './quota-read-model/quota-read-model.entity';
export { OrphanReadModelRow } from './orphan-read-model/orphan-read-model.entity';
