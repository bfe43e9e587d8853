import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { HttpRequest as Request } from '../http/edge/http-types';
import { headerOf } from '../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { CurrentPrincipal } from '../http/auth/access.guard';
import { traceIdOf } from '../http/request/request-id';
import { OpenConsoleDto } from './console.dto';
import { ProjectIdPipe, UuidPipe } from '../http/validation/path-params';
import { ConsoleSessionView, OpenConsoleSessionCommand } from './open-console-session.handler';

@Controller('v1/projects/:project_id/vms/:vm_id/console')
export class ConsoleSessionsController {
  constructor(private readonly commands: CommandBus) {}

  /** Opens a console session (201). Never idempotent-replayed: the answer carries a single-use token. */
  @Post()
  @HttpCode(201)
  open(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Param('vm_id', UuidPipe) vmId: string,
    @Body() body: OpenConsoleDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<ConsoleSessionView> {
    const origin = `${req.protocol}://${headerOf(req, 'host') ?? 'localhost'}`;
    return this.commands.execute(
      new OpenConsoleSessionCommand(projectId, vmId, body.type, origin, { actor: who.sub, traceId: traceIdOf(req) }),
    );
  }
}
