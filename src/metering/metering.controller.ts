import { Controller, Get, Query } from '@nestjs/common';
import { IsOptional, IsString, IsUUID, Matches } from 'class-validator';
import { LIMITS } from '../http/validation/limits';
import { PageQueryDto } from '../http/validation/page-query.dto';
import { MeteringQueries } from './metering.queries';

export class MeteringQueryDto extends PageQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.projectId) project?: string;
  @IsOptional() @IsUUID() vm_id?: string;
}

/** Metering records (what billing consumes from hcp.metering.v1), queryable when no Kafka is configured. */
@Controller('v1/ops/metering')
export class MeteringController {
  constructor(private readonly metering: MeteringQueries) {}

  @Get()
  list(@Query() q: MeteringQueryDto) {
    return this.metering.list({ project: q.project, vm: q.vm_id }, q.limit ?? LIMITS.listLimit.default, q.cursor);
  }
}
