import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { RequestContext } from '../../http/request/request-context';
import { JobAccepted } from '../../jobs';
import { VmOperationRequester } from './vm-operation-requester';

export class DeleteVmCommand {
  constructor(
    readonly projectId: string,
    readonly vmId: string,
    readonly ctx: RequestContext,
  ) {}
}

@CommandHandler(DeleteVmCommand)
export class DeleteVmHandler implements ICommandHandler<DeleteVmCommand, JobAccepted> {
  constructor(private readonly requester: VmOperationRequester) {}

  execute({ projectId, vmId, ctx }: DeleteVmCommand): Promise<JobAccepted> {
    return this.requester.request(projectId, vmId, ctx, (job_id) => ({ type: 'delete', job_id }));
  }
}
