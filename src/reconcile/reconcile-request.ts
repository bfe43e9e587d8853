import { Inject, Injectable } from '@nestjs/common';
import { conflict, jobEvent, JobQueued, notFound } from '@hcp/domain';
import { idsFor, RequestContext } from '../http/request/request-context';
import { JobAccepted, JobAdmission, JobRepository } from '../jobs';
import { eventContext } from '../platform/event-sourcing/event-context';
import { VmRepository } from '../vms';

/** Job ids of on-demand reconciles are derived from the ops idempotency key in a space of their own. */
const RECONCILE_ID_SCOPE = 'ops-reconcile';

/**
 * Opens a `vm.reconcile` job for one VM (ops: compare it with its provider now). The VM is not decided
 * on: the job only looks and records drift, so it takes no pending-job slot and can run beside the VM's
 * own job. A retried request (same Idempotency-Key) gets the same job.
 */
@Injectable()
export class ReconcileRequester {
  constructor(
    private readonly vms: VmRepository,
    @Inject(JobAdmission) private readonly admission: Pick<JobAdmission, 'admit'>,
    @Inject(JobRepository) private readonly jobs: Pick<JobRepository, 'load'>,
  ) {}

  async request(vmId: string, ctx: RequestContext): Promise<JobAccepted & { project_id: string }> {
    const jobId = idsFor(ctx, RECONCILE_ID_SCOPE, 'job');
    const { state: earlier } = await this.jobs.load(jobId);
    if (earlier) {
      if (earlier.resource_id !== vmId || earlier.type !== 'vm.reconcile')
        throw conflict('this idempotency key was used for a request on another resource');
      return { resource_id: vmId, job_id: jobId, project_id: earlier.project_id };
    }
    const { state: vm } = await this.vms.load(vmId);
    if (!vm || vm.status === 'deleted') throw notFound('VM');
    const context = eventContext(ctx.actor, ctx.traceId);
    const queued = jobEvent<JobQueued>('JobQueued', {
      job_id: jobId,
      project_id: vm.project_id,
      type: 'vm.reconcile',
      resource_id: vmId,
      trace_id: ctx.traceId,
      actor: ctx.actor,
      params: {},
    });
    await this.admission.admit(queued, context);
    return { resource_id: vmId, job_id: jobId, project_id: vm.project_id };
  }
}
