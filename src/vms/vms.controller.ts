import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiAcceptedResponse } from '@nestjs/swagger';
import type { HttpReply as Response, HttpRequest as Request } from '../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { CurrentPrincipal } from '../http/auth/access.guard';
import { CreateVmCommand } from './commands/create-vm.handler';
import { DeleteVmCommand } from './commands/delete-vm.handler';
import { RebootVmCommand } from './commands/reboot-vm.handler';
import { StartVmCommand } from './commands/start-vm.handler';
import { StopVmCommand } from './commands/stop-vm.handler';
import { UpdateVmLabelsCommand } from './commands/update-vm-labels.handler';
import { RequestContext } from '../http/request/request-context';
import { JsonText } from '../http/json-text';
import { JobAccepted } from '../jobs';
import { presentVm, VmView } from '@hcp/projections';
import { VmQueries } from './vm.queries';
import { LIMITS } from '../http/validation/limits';
import { IdempotentRequest } from '../http/idempotency/idempotency.interceptor';
import { traceIdOf } from '../http/request/request-id';
import type { CarryingRequest } from '../http/request/request-recorder';
import { CreateVmDto, ListVmsQueryDto, UpdateVmDto, VmActionDto } from './vm.dto';
import { ProjectIdPipe, UuidPipe } from '../http/validation/path-params';

@Controller('v1/projects/:project_id/vms')
export class VmsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly vms: VmQueries,
  ) {}

  @Get()
  list(@Param('project_id', ProjectIdPipe) projectId: string, @Query() query: ListVmsQueryDto) {
    const tags = query.tag?.map((t) => {
      const at = t.indexOf(':');
      return { key: t.slice(0, at), value: t.slice(at + 1) };
    });
    return this.vms.list(
      projectId,
      { zone: query.zone, status: query.status, name: query.name, tags },
      query.limit ?? LIMITS.listLimit.default,
      query.cursor,
    );
  }

  @Post()
  // The status is set with the Location header in accepted(), which @HttpCode cannot see.
  @ApiAcceptedResponse()
  create(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Body() body: CreateVmDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    return accepted(res, projectId, this.commands.execute(new CreateVmCommand(projectId, body, context(who, req))));
  }

  @Get(':vm_id')
  get(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
  ): Promise<JsonText<VmView>> {
    return this.vms.get(projectId, vmId);
  }

  @Patch(':vm_id')
  async update(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
    @Body() body: UpdateVmDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<VmView> {
    const vm = await this.commands.execute(new UpdateVmLabelsCommand(projectId, vmId, body, context(who, req)));
    return presentVm(vm);
  }

  @Delete(':vm_id')
  @HttpCode(202)
  delete(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    return accepted(res, projectId, this.commands.execute(new DeleteVmCommand(projectId, vmId, context(who, req))));
  }

  @Post(':vm_id/actions/start')
  @HttpCode(202)
  start(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
    @Body() _body: VmActionDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    return accepted(res, projectId, this.commands.execute(new StartVmCommand(projectId, vmId, context(who, req))));
  }

  @Post(':vm_id/actions/stop')
  @HttpCode(202)
  stop(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
    @Body() body: VmActionDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    return accepted(
      res,
      projectId,
      this.commands.execute(new StopVmCommand(projectId, vmId, body.force ?? false, context(who, req))),
    );
  }

  @Post(':vm_id/actions/reboot')
  @HttpCode(202)
  reboot(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
    @Body() body: VmActionDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    return accepted(
      res,
      projectId,
      this.commands.execute(new RebootVmCommand(projectId, vmId, body.force ?? false, context(who, req))),
    );
  }
}

function context(who: Principal, req: IdempotentRequest & CarryingRequest): RequestContext {
  return {
    actor: who.sub,
    traceId: traceIdOf(req),
    ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
    ...(req.carried ? { carried: req.carried } : {}),
  };
}

/** 202 with the job's address in `Location`. */
async function accepted(res: Response, projectId: string, result: Promise<JobAccepted>): Promise<JobAccepted> {
  const answer = await result;
  res.status(202).header('Location', `/v1/projects/${encodeURIComponent(projectId)}/jobs/${answer.job_id}`);
  return answer;
}
