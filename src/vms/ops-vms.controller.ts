import { Controller, Get, Query } from '@nestjs/common';
import { LIMITS } from '../http/validation/limits';
import { OpsListQueryDto } from '../http/validation/page-query.dto';
import { VmQueries } from './vm.queries';

/** VMs across all projects, for ops. */
@Controller('v1/ops/vms')
export class OpsVmsController {
  constructor(private readonly vms: VmQueries) {}

  @Get()
  list(@Query() q: OpsListQueryDto) {
    return this.vms.listForOps(
      { projectId: q.project, status: q.status, zone: q.zone },
      q.limit ?? LIMITS.listLimit.default,
      q.cursor,
    );
  }
}
