import { Controller, Get, Param, Query } from '@nestjs/common';

import { JobQueries } from './job.queries';
import { LIMITS } from '../http/validation/limits';
import { ListJobsQueryDto } from './job.dto';
import { ProjectIdPipe, UuidPipe } from '../http/validation/path-params';

@Controller('v1/projects/:project_id/jobs')
export class JobsController {
  constructor(private readonly jobs: JobQueries) {}

  @Get()
  list(@Param('project_id', ProjectIdPipe) projectId: string, @Query() query: ListJobsQueryDto) {
    return this.jobs.list(
      projectId,
      { resource_id: query.resource_id, status: query.status },
      query.limit ?? LIMITS.listLimit.default,
      query.cursor,
    );
  }

  @Get(':job_id')
  get(@Param('project_id', ProjectIdPipe) projectId: string, @Param('job_id', UuidPipe) jobId: string) {
    return this.jobs.get(projectId, jobId);
  }
}
