import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { OpsCatalogCommands } from '../ops-catalog.commands';
import { OpsCatalogQueries } from '../ops-catalog.queries';
import { presentOpsResource } from '../ops.presenters';
import { CurrentPrincipal } from '../../http/auth/access.guard';
import { traceIdOf } from '../../http/request/request-id';
import { OpsIdPipe } from '../../http/validation/path-params';
import { CreateZoneDto, ZoneBodyDto } from './ops.dto';

@Controller('v1/ops/zones')
export class ZonesController {
  constructor(
    private readonly commands: OpsCatalogCommands,
    private readonly queries: OpsCatalogQueries,
  ) {}

  @Post()
  async create(@Body() body: CreateZoneDto, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    const { id, ...spec } = body;
    return presentOpsResource(
      await this.commands.createZone(
        id,
        { ...spec, cluster_ids: [...spec.cluster_ids] },
        eventContext(who.sub, traceIdOf(req)),
      ),
    );
  }

  @Get()
  async list() {
    return { items: (await this.queries.list('zone')).map(presentOpsResource), next_cursor: null };
  }

  @Get(':id')
  async get(@Param('id', OpsIdPipe) id: string) {
    return presentOpsResource(await this.queries.get('zone', id));
  }

  /** Replaces the zone's clusters, name and policy. */
  @Put(':id')
  async replace(
    @Param('id', OpsIdPipe) id: string,
    @Body() body: ZoneBodyDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ) {
    return presentOpsResource(
      await this.commands.replaceZone(
        id,
        { ...body, cluster_ids: [...body.cluster_ids] },
        eventContext(who.sub, traceIdOf(req)),
      ),
    );
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(
    @Param('id', OpsIdPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<void> {
    await this.commands.deleteZone(id, eventContext(who.sub, traceIdOf(req)));
  }
}
