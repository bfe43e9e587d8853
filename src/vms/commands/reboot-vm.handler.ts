import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { RequestContext } from '../../http/request/request-context';
import { JobAccepted } from '../../jobs';
import { VmOperationRequester } from './vm-operation-requester';

export class RebootVmCommand {
  constructor(
    readonly projectId: string,
    readonly vmId: string,
    readonly force: boolean,
    readonly ctx: RequestContext,
  ) {}
}

@CommandHandler(RebootVmCommand)
export class RebootVmHandler implements ICommandHandler<RebootVmCommand, JobAccepted> {
  constructor(private readonly requester: VmOperationRequester) {}

  execute({ projectId, vmId, force, ctx }: RebootVmCommand): Promise<JobAccepted> {
    return this.requester.request(projectId, vmId, ctx, (job_id) => ({ type: 'reboot', job_id, force }));
  }
}
