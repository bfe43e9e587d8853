import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { decideVm, notFound, VmState } from '@hcp/domain';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { RequestContext } from '../../http/request/request-context';
import { VmRepository } from '../vm.repository';

export class UpdateVmLabelsCommand {
  constructor(
    readonly projectId: string,
    readonly vmId: string,
    readonly patch: { tags?: Record<string, string>; metadata?: Record<string, string> },
    readonly ctx: RequestContext,
  ) {}
}

/** PATCH of tags and metadata: no provider work, so no job; answers the VM as it now is. */
@CommandHandler(UpdateVmLabelsCommand)
export class UpdateVmLabelsHandler implements ICommandHandler<UpdateVmLabelsCommand, VmState> {
  constructor(private readonly vms: VmRepository) {}

  async execute({ projectId, vmId, patch, ctx }: UpdateVmLabelsCommand): Promise<VmState> {
    const { state } = await this.vms.update(
      vmId,
      (current) => {
        if (!current || current.project_id !== projectId) throw notFound('VM');
        return decideVm(current, { type: 'update_labels', ...patch });
      },
      eventContext(ctx.actor, ctx.traceId),
    );
    return state!;
  }
}
