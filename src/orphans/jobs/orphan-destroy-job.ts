import { EventContext, jobEvent, JobQueued, OrphanDestroyRequested } from '@hcp/domain';

/**
 * The job a destroy request asks for. Deterministic, so the command and the job dispatcher derive the
 * same JobQueued and whichever appends it first wins.
 */
export function orphanDestroyJob(
  request: OrphanDestroyRequested,
  orphanId: string,
  context: Pick<EventContext, 'actor' | 'trace_id'>,
): JobQueued {
  return jobEvent<JobQueued>('JobQueued', {
    job_id: request.data.job_id,
    project_id: request.data.project_id,
    type: 'orphan.destroy',
    resource_id: orphanId,
    trace_id: context.trace_id,
    actor: context.actor,
    params: {},
  });
}
