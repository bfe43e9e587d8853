import { Body, Controller, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { CurrentPrincipal } from '../http/auth/access.guard';
import { traceIdOf } from '../http/request/request-id';
import { LIMITS } from '../http/validation/limits';
import { OpsListQueryDto } from '../http/validation/page-query.dto';
import { UuidPipe } from '../http/validation/path-params';
import { eventContext } from '../platform/event-sourcing/event-context';
import { JobQueries } from './job.queries';
import { JobRecovery } from './recovery/job-recovery';
import { RecoverJobDto } from './recovery/recover-job.dto';

/** Jobs across all projects, for ops, and what ops can do with a stuck or failed one. */
@Controller('v1/ops/jobs')
export class OpsJobsController {
  constructor(
    private readonly jobs: JobQueries,
    private readonly recovery: JobRecovery,
  ) {}

  @Get()
  list(@Query() q: OpsListQueryDto) {
    return this.jobs.list(
      q.project ?? null,
      { status: q.status, resource_id: q.resource_id },
      q.limit ?? LIMITS.listLimit.default,
      q.cursor,
    );
  }

  /** 200 with the job as the recovery left it (read from its stream, not the lagging read model). */
  @Post(':id/recover')
  @HttpCode(200)
  recover(
    @Param('id', UuidPipe) id: string,
    @Body() body: RecoverJobDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ) {
    return this.recovery.recover(id, body.action, body.reason, eventContext(who.sub, traceIdOf(req)));
  }
}
