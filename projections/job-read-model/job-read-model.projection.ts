import { evolveJob, JOB_STREAM_PREFIX, JobEvent, JobState } from '@hcp/domain';
import { FoldedStateProjection } from '../runner/folded-state.projection';
import { JobReadModelRow } from './job-read-model.entity';

/** The job read model behind job list and detail queries. */
export function jobReadModelProjection(): FoldedStateProjection<JobState, JobEvent, JobReadModelRow> {
  return new FoldedStateProjection(
    'job-read-model',
    JOB_STREAM_PREFIX,
    JobReadModelRow,
    evolveJob,
    toRow,
    'job_read_model',
  );
}

function toRow(state: JobState, position: bigint): JobReadModelRow {
  return {
    id: state.id,
    project_id: state.project_id,
    type: state.type,
    status: state.status,
    resource_id: state.resource_id,
    attempts: state.attempts,
    created_at: new Date(state.created_at),
    started_at: state.started_at ? new Date(state.started_at) : null,
    finished_at: state.finished_at ? new Date(state.finished_at) : null,
    error: state.error,
    trace_id: state.trace_id,
    state: withoutFacts(state),
    position: position.toString(),
  };
}

/**
 * Facts are provider handles for the job's own attempts (the worker reads them from the job's stream):
 * the read model behind the job answer never holds them.
 */
function withoutFacts(state: JobState): JobState {
  if (!state.facts) return state;
  const { facts: _facts, ...rest } = state;
  return rest;
}
