import { Controller, Get, Query } from '@nestjs/common';
import { IsISO8601, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { LIMITS } from '../http/validation/limits';
import { PageQueryDto } from '../http/validation/page-query.dto';
import { AuditQueries } from './audit.queries';

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
