import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { OpsCatalogCommands } from '../ops-catalog.commands';
import { OpsCatalogQueries } from '../ops-catalog.queries';
import { presentProvider } from '../ops.presenters';
import { ProviderHealthService } from '../drivers/provider-health';
import { OpsResourceRepository } from '../ops-resource.repository';
import { notFound } from '@hcp/domain';
import { CurrentPrincipal } from '../../http/auth/access.guard';
import { traceIdOf } from '../../http/request/request-id';
import { OpsIdPipe } from '../../http/validation/path-params';
import { CreateProviderDto, UpdateProviderDto } from './ops.dto';

@Controller('v1/ops/providers')
export class ProvidersController {
  constructor(
    private readonly commands: OpsCatalogCommands,
    private readonly queries: OpsCatalogQueries,
    private readonly health: ProviderHealthService,
    private readonly resources: OpsResourceRepository,
  ) {}

  /** Registers and checks connectivity at once; an unreachable provider is registered with its health. */
  @Post()
  async create(@Body() body: CreateProviderDto, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    const provider = await this.commands.registerProvider(
      {
        name: body.name,
        type: body.type,
        endpoint: body.endpoint ?? null,
        tls: { ...body.tls },
        settings: body.settings ?? {},
        ...(body.credentials ? { credentials: body.credentials } : {}),
      },
      eventContext(who.sub, traceIdOf(req)),
    );
    return presentProvider(provider, await this.health.check(provider.id).catch(() => undefined));
  }

  @Get()
  async list() {
    const providers = await this.queries.list('provider');
    const health = await this.health.of(providers.map((p) => p.id));
    return { items: providers.map((p) => presentProvider(p, health.get(p.id))), next_cursor: null };
  }

  @Get(':id')
  async get(@Param('id', OpsIdPipe) id: string) {
    const provider = await this.queries.get('provider', id);
    return presentProvider(provider, (await this.health.of([id])).get(id));
  }

  @Patch(':id')
  async update(
    @Param('id', OpsIdPipe) id: string,
    @Body() body: UpdateProviderDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ) {
    const provider = await this.commands.updateProvider(
      id,
      { ...body, ...(body.tls ? { tls: { ...body.tls } } : {}) },
      eventContext(who.sub, traceIdOf(req)),
    );
    return presentProvider(provider, await this.health.check(id).catch(() => undefined));
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(
    @Param('id', OpsIdPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<void> {
    await this.commands.deleteProvider(id, eventContext(who.sub, traceIdOf(req)));
  }

  /** On-demand connectivity check. */
  @Post(':id/check')
  @HttpCode(200)
  async check(@Param('id', OpsIdPipe) id: string) {
    // From the stream, not the read model: a provider registered a moment ago can be checked at once.
    if (!(await this.resources.live('provider', id))) throw notFound('provider');
    return this.health.check(id);
  }
}
