import { Controller, Get, Query } from '@nestjs/common';
import { LIMITS } from '../http/validation/limits';
import { OpsListQueryDto } from '../http/validation/page-query.dto';
import { JobQueries } from './job.queries';

/** Jobs across all projects, for ops. */
@Controller('v1/ops/jobs')
export class OpsJobsController {
  constructor(private readonly jobs: JobQueries) {}

  @Get()
  list(@Query() q: OpsListQueryDto) {
    return this.jobs.list(
      q.project ?? null,
      { status: q.status, resource_id: q.resource_id },
      q.limit ?? LIMITS.listLimit.default,
      q.cursor,
    );
  }
}
