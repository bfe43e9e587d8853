import { OPERATION_OF_REQUEST, VmRequestEvent } from '../vm/vm.events';
import { JobQueued, JobType, jobEvent } from './job.events';

/**
 * The job a VM request event asks for. Deterministic: the command handler and the job dispatcher both
 * derive the same JobQueued from the same request, so whichever appends it first wins and the other's
 * append is a harmless no-op.
 */
export function jobQueuedFor(
  request: VmRequestEvent,
  vmId: string,
  ctx: { trace_id: string; actor: string },
): JobQueued {
  const type = `vm.${OPERATION_OF_REQUEST[request.type]}` as JobType;
  const params: Record<string, unknown> = 'force' in request.data ? { force: request.data.force } : {};
  return jobEvent<JobQueued>('JobQueued', {
    job_id: request.data.job_id,
    project_id: request.data.project_id,
    type,
    resource_id: vmId,
    trace_id: ctx.trace_id,
    actor: ctx.actor,
    params,
    // No deadline here: whoever opens the job stamps it (it knows the configured length), see
    // JobRepository.ensureQueued.
  });
}
