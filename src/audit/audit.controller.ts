import { Controller, Get, Query } from '@nestjs/common';
import { IsISO8601, IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';
import { AuditQueries } from './audit.queries';
import { MeteringQueries } from '../metering/metering.queries';
import { LIMITS } from '../http/validation/limits';
import { PageQueryDto } from '../vms/vm.dto';

export class AuditQueryDto extends PageQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.projectId) project?: string;
  @IsOptional() @IsString() @MaxLength(255) actor?: string;
  @IsOptional() @IsString() @MaxLength(128) action?: string;
  @IsOptional() @IsString() @MaxLength(255) target?: string;
  @IsOptional() @IsISO8601({ strict: true }) from?: string;
  @IsOptional() @IsISO8601({ strict: true }) to?: string;
}

/** The audit trail for security auditors (newest first; filters: project, actor, action, target, from, to). */
@Controller('v1/ops/audit')
export class AuditController {
  constructor(private readonly audit: AuditQueries) {}

  @Get()
  list(@Query() q: AuditQueryDto) {
    return this.audit.list(q, q.limit ?? LIMITS.listLimit.default, q.cursor);
  }
}

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
