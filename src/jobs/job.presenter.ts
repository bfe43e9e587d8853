import type { HcpErrorShape, JobState } from '@hcp/domain';

export interface JobView {
  id: string;
  project_id: string;
  type: string;
  status: string;
  resource_id: string;
  attempts: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error: HcpErrorShape | null;
  trace_id: string;
}

export function presentJob(job: JobState): JobView {
  return {
    id: job.id,
    project_id: job.project_id,
    type: job.type,
    status: job.status,
    resource_id: job.resource_id,
    attempts: job.attempts,
    created_at: job.created_at,
    started_at: job.started_at,
    finished_at: job.finished_at,
    error: job.error,
    trace_id: job.trace_id,
  };
}
