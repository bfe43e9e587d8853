import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { decideVm, EventContext, HcpError, jobQueuedFor, VmCreateRequestedData, VmRequestEvent } from '@hcp/domain';
import { QuotaService } from '../../quotas';
import { CatalogService } from '../../catalog';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { idsFor, RequestContext } from '../../http/request/request-context';
import { JobAccepted, JobAdmission, JobOpening } from '../../jobs';
import { VmRepository } from '../vm.repository';

/** A create as the tenant asks for it: the choices it must name, and the ones with defaults. */
export type CreateVmInput = Pick<VmCreateRequestedData, 'name' | 'zone' | 'image_id' | 'flavor_id'> &
  Partial<Pick<VmCreateRequestedData, 'tags' | 'metadata' | 'ssh_keys' | 'user_data' | 'power_on'>>;

export class CreateVmCommand {
  constructor(
    readonly projectId: string,
    readonly input: CreateVmInput,
    readonly ctx: RequestContext,
  ) {}
}

/** Resolves the catalog references into resources and a placement (the zone's policy), then records the request. */
@CommandHandler(CreateVmCommand)
export class CreateVmHandler implements ICommandHandler<CreateVmCommand, JobAccepted> {
  constructor(
    @Inject(CatalogService) private readonly catalog: Pick<CatalogService, 'resolveForCreate'>,
    private readonly vms: VmRepository,
    @Inject(JobAdmission) private readonly jobs: Pick<JobAdmission, 'admit' | 'opening' | 'opened'>,
    private readonly quotas: QuotaService,
  ) {}

  async execute({ projectId, input, ctx }: CreateVmCommand): Promise<JobAccepted> {
    const { resources, placement } = await this.catalog.resolveForCreate(input.zone, input.image_id, input.flavor_id);
    const vmId = idsFor(ctx, projectId, 'vm');
    const jobId = idsFor(ctx, projectId, 'job');
    const data: VmCreateRequestedData = {
      vm_id: vmId,
      project_id: projectId,
      job_id: jobId,
      name: input.name,
      zone: input.zone,
      image_id: input.image_id,
      flavor_id: input.flavor_id,
      resources,
      placement,
      tags: input.tags ?? {},
      metadata: input.metadata ?? {},
      ssh_keys: input.ssh_keys ?? [],
      ...(input.user_data !== undefined ? { user_data: input.user_data } : {}),
      power_on: input.power_on ?? true,
    };
    const context = eventContext(ctx.actor, ctx.traceId);
    const events = decideVm(null, { type: 'create', data });
    const queued = jobQueuedFor(events[0] as VmRequestEvent, vmId, context);
    // The reservation, the VM's request, its job and (on PostgreSQL) the job's queue row commit together,
    // in the quota's group commit: one transaction for every create waiting on the project. A refusal
    // (403 QUOTA_EXCEEDED) leaves nothing behind. On EventStoreDB the streams are written in this order,
    // and a crash part-way leaves a prefix the VM job dispatcher completes (a VM's request becomes its job).
    // The request's own record (RequestReceived, RequestAnswered 202) commits with them too, first, so
    // the audit trail shows it before what it caused.
    const request = ctx.carried;
    let opening: JobOpening | undefined;
    const reserved = await this.quotas.reserve(projectId, vmId, resources, context, () => {
      opening = this.jobs.opening(queued, context);
      return {
        appends: [
          ...(request ? [request.acceptedRecord(jobId)] : []),
          this.vms.opening(vmId, events, context, 'no_stream'),
          ...opening.writes.appends,
        ],
        sqlWrites: opening.writes.sqlWrites,
      };
    });
    if (reserved.alongside && opening) {
      request?.committed(jobId);
      await this.jobs.opened(opening);
      return { resource_id: vmId, job_id: jobId };
    }
    // Not written with the reservation: a retry of this request (same derived vm id) finds its reservation
    // held and changes nothing, or the VM's stream existed already; each step is then taken on its own.
    try {
      await this.vms.append({ id: vmId, state: null, revision: 'no_stream' }, events, context);
    } catch (err) {
      if (!(await this.isRetryOf(err, projectId, vmId, jobId))) {
        await this.releaseUnrecorded(projectId, vmId, context);
        throw err;
      }
    }
    await this.jobs.admit(queued, context);
    return { resource_id: vmId, job_id: jobId };
  }

  /** The VM was not recorded: give its reservation back. When that cannot be told, keep it (never undercount). */
  private async releaseUnrecorded(projectId: string, vmId: string, context: EventContext): Promise<void> {
    const recorded = await this.vms.creationRequest(vmId).then(
      () => true,
      (err) => !(err instanceof HcpError && err.code === 'NOT_FOUND'),
    );
    if (!recorded) await this.quotas.release(projectId, vmId, context).catch(() => undefined);
  }

  /** With derived ids, the stream exists only if an earlier try of this very request created it. */
  private async isRetryOf(err: unknown, projectId: string, vmId: string, jobId: string): Promise<boolean> {
    if (!(err instanceof HcpError) || err.code !== 'CONFLICT') return false;
    const first = await this.vms.creationRequest(vmId).catch(() => null);
    return first?.project_id === projectId && first.job_id === jobId;
  }
}
