import { Injectable } from '@nestjs/common';
import { decideVm, jobQueuedFor, notFound, VmCommand, VmRequestEvent } from '@hcp/domain';
import { eventContext } from '../../eventing/event-context';
import { JobRepository } from '../../jobs/job.repository';
import { idsFor, JobAccepted, RequestContext } from '../request-context';
import { VmRepository } from '../vm.repository';

type OperationCommand = Extract<VmCommand, { job_id: string }>;

/**
 * The shared path of start, stop, reboot and delete: decide on the VM aggregate (retrying on a
 * concurrent change), then open the job. A VM of another project is NOT_FOUND, never FORBIDDEN.
 */
@Injectable()
export class VmOperationRequester {
  constructor(
    private readonly vms: VmRepository,
    private readonly jobs: JobRepository,
  ) {}

  async request(projectId: string, vmId: string, ctx: RequestContext, command: (jobId: string) => OperationCommand): Promise<JobAccepted> {
    const jobId = idsFor(ctx, projectId, 'job');
    const context = eventContext(ctx.actor, ctx.traceId);
    const { events } = await this.vms.update(
      vmId,
      (state) => {
        if (!state || state.project_id !== projectId) throw notFound('VM');
        // A retry of an idempotent request whose first try got this far: the job exists already.
        if (state.last_job_id === jobId) return [];
        return decideVm(state, command(jobId));
      },
      context,
    );
    if (events.length > 0) await this.jobs.ensureQueued(jobQueuedFor(events[0] as VmRequestEvent, vmId, context), context);
    return { resource_id: vmId, job_id: jobId };
  }
}
