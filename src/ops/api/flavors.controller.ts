import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { OpsCatalogCommands } from '../ops-catalog.commands';
import { OpsCatalogQueries } from '../ops-catalog.queries';
import { presentOpsResource } from '../ops.presenters';
import { CurrentPrincipal } from '../../http/auth/access.guard';
import { traceIdOf } from '../../http/request/request-id';
import { UuidPipe } from '../../http/validation/path-params';
import { CreateFlavorDto, UpdateFlavorDto } from './ops.dto';

@Controller('v1/ops/flavors')
export class OpsFlavorsController {
  constructor(
    private readonly commands: OpsCatalogCommands,
    private readonly queries: OpsCatalogQueries,
  ) {}

  @Post()
  async create(@Body() body: CreateFlavorDto, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    return presentOpsResource(
      await this.commands.registerFlavor({ ...body, extras: body.extras ?? {} }, eventContext(who.sub, traceIdOf(req))),
    );
  }

  @Get()
  async list() {
    return { items: (await this.queries.list('flavor')).map(presentOpsResource), next_cursor: null };
  }

  @Patch(':id')
  async update(
    @Param('id', UuidPipe) id: string,
    @Body() body: UpdateFlavorDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ) {
    return presentOpsResource(await this.commands.updateFlavor(id, { ...body }, eventContext(who.sub, traceIdOf(req))));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(
    @Param('id', UuidPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<void> {
    await this.commands.deleteFlavor(id, eventContext(who.sub, traceIdOf(req)));
  }
}
