import { Inject, Injectable } from '@nestjs/common';
import {
  capabilitiesForAction,
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
import { JobAccepted, JobAdmission } from '../../jobs';
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
    @Inject(JobAdmission) private readonly jobs: Pick<JobAdmission, 'admit'>,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'clusterCapabilities'>,
  ) {}

  async request(
    projectId: string,
    vmId: string,
    ctx: RequestContext,
    command: (jobId: string) => OperationCommand,
  ): Promise<JobAccepted> {
    const jobId = idsFor(ctx, projectId, 'job');
    await this.assertCapable(projectId, vmId, command(jobId));
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
    if (events.length > 0) await this.jobs.admit(jobQueuedFor(events[0] as VmRequestEvent, vmId, context), context);
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
