import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { RequestContext } from '../../http/request/request-context';
import { JobAccepted } from '../../jobs';
import { VmOperationRequester } from './vm-operation-requester';

export class StopVmCommand {
  constructor(
    readonly projectId: string,
    readonly vmId: string,
    readonly force: boolean,
    readonly ctx: RequestContext,
  ) {}
}

@CommandHandler(StopVmCommand)
export class StopVmHandler implements ICommandHandler<StopVmCommand, JobAccepted> {
  constructor(private readonly requester: VmOperationRequester) {}

  execute({ projectId, vmId, force, ctx }: StopVmCommand): Promise<JobAccepted> {
    return this.requester.request(projectId, vmId, ctx, (job_id) => ({ type: 'stop', job_id, force }));
  }
}
