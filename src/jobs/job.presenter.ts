import type { HcpErrorShape, JobState } from '@hcp/domain';

const JOB_VIEW_FIELDS = [
  'id',
  'project_id',
  'type',
  'status',
  'resource_id',
  'attempts',
  'created_at',
  'started_at',
  'finished_at',
  'error',
  'trace_id',
  'deadline',
] as const satisfies ReadonlyArray<keyof JobState>;

/** A job as API.md shows it; the worker's parameters and the actor stay internal. */
export type JobView = Pick<JobState, (typeof JOB_VIEW_FIELDS)[number]>;

export function presentJob(job: JobState): JobView {
  const view = Object.fromEntries(JOB_VIEW_FIELDS.map((field) => [field, job[field]])) as JobView;
  return job.error ? { ...view, error: tenantSafeError(job.error) } : view;
}

/** Drivers keep the provider's own words under `details.provider` for ops; tenants never see them. */
function tenantSafeError(error: HcpErrorShape): HcpErrorShape {
  if (!error.details || !('provider' in error.details)) return error;
  const { provider: _provider, ...details } = error.details;
  return { ...error, ...(Object.keys(details).length ? { details } : { details: undefined }) };
}
