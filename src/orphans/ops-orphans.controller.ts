import { Controller, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { HttpReply as Response } from '../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { CurrentPrincipal } from '../http/auth/access.guard';
import { IdempotentRequest } from '../http/idempotency/idempotency.interceptor';
import { traceIdOf } from '../http/request/request-id';
import { LIMITS } from '../http/validation/limits';
import { UuidPipe } from '../http/validation/path-params';
import { JobAccepted } from '../jobs';
import { eventContext } from '../platform/event-sourcing/event-context';
import { OrphanAdopter } from './commands/orphan-adopter';
import { OrphanDestroyer } from './commands/orphan-destroyer';
import { ListOrphansQueryDto } from './orphan.dto';
import { OrphanView, presentOrphan } from './orphan.presenter';
import { OrphanQueries } from './orphan.queries';

/** Provider resources that carry an HCP id but have no live VM, and what ops do with them. */
@Controller('v1/ops/orphans')
export class OpsOrphansController {
  constructor(
    private readonly orphans: OrphanQueries,
    private readonly adopter: OrphanAdopter,
    private readonly destroyer: OrphanDestroyer,
  ) {}

  @Get()
  list(@Query() q: ListOrphansQueryDto) {
    return this.orphans.list(
      { provider_id: q.provider_id, cluster_id: q.cluster_id, status: q.status },
      q.limit ?? LIMITS.listLimit.default,
      q.cursor,
    );
  }

  @Get(':id')
  get(@Param('id', UuidPipe) id: string): Promise<OrphanView> {
    return this.orphans.get(id);
  }

  /** 200 with the orphan as the adoption left it (from its stream, not the lagging read model). */
  @Post(':id/adopt')
  @HttpCode(200)
  async adopt(
    @Param('id', UuidPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: IdempotentRequest,
  ): Promise<OrphanView> {
    return presentOrphan(await this.adopter.adopt(id, eventContext(who.sub, traceIdOf(req))));
  }

  /**
   * 202 with the destroy job. `Location` is the orphan: it shows the job's progress to the infra-admins
   * who may destroy (status destroying, then destroyed or destroy_failed with the error).
   */
  @Post(':id/destroy')
  @HttpCode(202)
  async destroy(
    @Param('id', UuidPipe) id: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: IdempotentRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    const accepted = await this.destroyer.request(
      id,
      {
        actor: who.sub,
        traceId: traceIdOf(req),
        ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
      },
      'ops',
    );
    res.header('Location', `/v1/ops/orphans/${accepted.resource_id}`);
    return accepted;
  }
}
