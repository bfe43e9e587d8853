import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { OpsCatalogCommands } from '../ops-catalog.commands';
import { OpsCatalogQueries } from '../ops-catalog.queries';
import { presentOpsResource } from '../ops.presenters';
import { CurrentPrincipal } from '../../http/auth/access.guard';
import { traceIdOf } from '../../http/request/request-id';
import { OpsIdPipe } from '../../http/validation/path-params';
import { CreateClusterDto, UpdateClusterDto } from './ops.dto';

@Controller('v1/ops/clusters')
export class ClustersController {
  constructor(
    private readonly commands: OpsCatalogCommands,
    private readonly queries: OpsCatalogQueries,
  ) {}

  @Post()
  async create(@Body() body: CreateClusterDto, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    const cluster = await this.commands.registerCluster(
      {
        name: body.name,
        provider_id: body.provider_id,
        placement_hints: body.placement_hints ?? {},
        capacity: body.capacity ? { ...body.capacity } : null,
        enabled: body.enabled ?? true,
        capabilities: body.capabilities ?? {},
      },
      eventContext(who.sub, traceIdOf(req)),
    );
    return presentOpsResource(cluster);
  }

  @Get()
  async list() {
    return { items: (await this.queries.list('cluster')).map(presentOpsResource), next_cursor: null };
  }

  @Get(':id')
  async get(@Param('id', OpsIdPipe) id: string) {
    return presentOpsResource(await this.queries.get('cluster', id));
  }

  @Patch(':id')
  async update(
    @Param('id', OpsIdPipe) id: string,
    @Body() body: UpdateClusterDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ) {
    const patch = { ...body, ...(body.capacity ? { capacity: { ...body.capacity } } : {}) };
    return presentOpsResource(await this.commands.updateCluster(id, patch, eventContext(who.sub, traceIdOf(req))));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(
    @Param('id', OpsIdPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<void> {
    await this.commands.deleteCluster(id, eventContext(who.sub, traceIdOf(req)));
  }
}
