import { Inject, Injectable } from '@nestjs/common';
import {
  capabilitiesForAction,
  conflict,
  decideVm,
  HcpError,
  jobQueuedFor,
  missingCapabilities,
  notFound,
  VmCommand,
  VmRequestEvent,
} from '@hcp/domain';
import { DriverRegistry } from '../../ops';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { idsFor, RequestContext } from '../../http/request/request-context';
import { JobAccepted, JobAdmission, JobOpening, JobRepository } from '../../jobs';
import { VmRepository } from '../vm.repository';

type OperationCommand = Extract<VmCommand, { job_id: string }>;

/**
 * The shared path of start, stop, reboot and delete: decide on the VM aggregate (retrying on a
 * concurrent change), then open the job. A VM of another project is NOT_FOUND, never FORBIDDEN.
 *
 * A retried request (same idempotency key, so the same job id) whose job exists already is answered
 * with that job before anything is decided: the VM may have moved on since (another operation, a
 * changed cluster), and deciding again would either refuse a request that was accepted or attach a
 * second request to a job id whose stream is already written.
 */
@Injectable()
export class VmOperationRequester {
  constructor(
    private readonly vms: VmRepository,
    @Inject(JobAdmission) private readonly admission: Pick<JobAdmission, 'admit' | 'opening' | 'opened'>,
    @Inject(JobRepository) private readonly jobs: Pick<JobRepository, 'load'>,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'clusterCapabilities'>,
  ) {}

  async request(
    projectId: string,
    vmId: string,
    ctx: RequestContext,
    command: (jobId: string) => OperationCommand,
  ): Promise<JobAccepted> {
    const jobId = idsFor(ctx, projectId, 'job');
    const accepted = await this.acceptedBefore(projectId, vmId, jobId);
    if (accepted) return accepted;
    await this.assertCapable(projectId, vmId, command(jobId));
    const context = eventContext(ctx.actor, ctx.traceId);
    // The VM's request, the request's record, its job and (on PostgreSQL) the job's queue row commit in
    // one appendMany.
    const request = ctx.carried;
    let opening: JobOpening | undefined;
    const { events, alongside } = await this.vms.update(
      vmId,
      (state) => {
        if (!state || state.project_id !== projectId) throw notFound('VM');
        // A retry of an idempotent request whose first try got this far: the job exists already.
        if (state.last_job_id === jobId) return [];
        return decideVm(state, command(jobId));
      },
      context,
      undefined,
      (decided) => {
        opening = this.admission.opening(jobQueuedFor(decided[0] as VmRequestEvent, vmId, context), context);
        const record = request ? [request.acceptedRecord(jobId)] : [];
        return { ...opening.writes, appends: [...record, ...opening.writes.appends] };
      },
    );
    if (alongside && opening) {
      request?.committed(jobId);
      await this.admission.opened(opening);
    } else if (events.length > 0)
      await this.admission.admit(jobQueuedFor(events[0] as VmRequestEvent, vmId, context), context);
    return { resource_id: vmId, job_id: jobId };
  }

  /** The acceptance of an earlier try of this request, if its job exists; a job of another VM is a reused key. */
  private async acceptedBefore(projectId: string, vmId: string, jobId: string): Promise<JobAccepted | null> {
    const { state: job } = await this.jobs.load(jobId);
    if (!job) return null;
    if (job.project_id !== projectId || job.resource_id !== vmId)
      throw conflict('this idempotency key was used for a request on another resource');
    return { resource_id: vmId, job_id: jobId };
  }

  /** Refuses at request time what the VM's cluster cannot do (a reboot where there is none, ...). */
  private async assertCapable(projectId: string, vmId: string, command: OperationCommand): Promise<void> {
    const required = capabilitiesForAction(command);
    if (required.length === 0) return;
    const { state } = await this.vms.load(vmId);
    if (!state || state.project_id !== projectId || state.status === 'deleted') throw notFound('VM');
    const offered = await this.drivers.clusterCapabilities(state.placement.provider_id, state.placement.cluster_id);
    const missing = missingCapabilities(offered, { flags: required });
    if (missing.length)
      throw new HcpError('FEATURE_NOT_SUPPORTED', `the VM's zone does not support ${missing.join(', ')}`, { missing });
  }
}
