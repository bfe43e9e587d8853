import { Controller, Get, Query } from '@nestjs/common';
import { JobQueries } from '../jobs/job.queries';
import { VmQueries } from './vm.queries';
import { LIMITS } from '../http/validation/limits';
import { OpsListQueryDto } from '../ops/api/ops.dto';

/** VMs and jobs across all projects, for ops. */
@Controller('v1/ops')
export class OpsWorkloadController {
  constructor(
    private readonly vms: VmQueries,
    private readonly jobs: JobQueries,
  ) {}

  @Get('vms')
  listVms(@Query() q: OpsListQueryDto) {
    return this.vms.listForOps({ projectId: q.project, status: q.status, zone: q.zone }, q.limit ?? LIMITS.listLimit.default, q.cursor);
  }

  @Get('jobs')
  listJobs(@Query() q: OpsListQueryDto) {
    return this.jobs.list(q.project ?? null, { status: q.status, resource_id: q.resource_id }, q.limit ?? LIMITS.listLimit.default, q.cursor);
  }
}
