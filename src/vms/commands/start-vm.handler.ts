import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { RequestContext } from '../../http/request/request-context';
import { JobAccepted } from '../../jobs';
import { VmOperationRequester } from './vm-operation-requester';

export class StartVmCommand {
  constructor(
    readonly projectId: string,
    readonly vmId: string,
    readonly ctx: RequestContext,
  ) {}
}

@CommandHandler(StartVmCommand)
export class StartVmHandler implements ICommandHandler<StartVmCommand, JobAccepted> {
  constructor(private readonly requester: VmOperationRequester) {}

  execute({ projectId, vmId, ctx }: StartVmCommand): Promise<JobAccepted> {
    return this.requester.request(projectId, vmId, ctx, (job_id) => ({ type: 'start', job_id }));
  }
}
