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
import { CreateImageDto, UpdateImageDto } from './ops.dto';

/** Images with their per-cluster provider references (ops only; tenants see /v1/images). */
@Controller('v1/ops/images')
export class OpsImagesController {
  constructor(
    private readonly commands: OpsCatalogCommands,
    private readonly queries: OpsCatalogQueries,
  ) {}

  @Post()
  async create(@Body() body: CreateImageDto, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    return presentOpsResource(
      await this.commands.registerImage(
        { ...body, provider_refs: { ...body.provider_refs } },
        eventContext(who.sub, traceIdOf(req)),
      ),
    );
  }

  @Get()
  async list() {
    return { items: (await this.queries.list('image')).map(presentOpsResource), next_cursor: null };
  }

  @Patch(':id')
  async update(
    @Param('id', UuidPipe) id: string,
    @Body() body: UpdateImageDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ) {
    return presentOpsResource(await this.commands.updateImage(id, { ...body }, eventContext(who.sub, traceIdOf(req))));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(
    @Param('id', UuidPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<void> {
    await this.commands.deleteImage(id, eventContext(who.sub, traceIdOf(req)));
  }
}
