import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min } from 'class-validator';
import { LIMITS } from './limits';

/** The keyset paging every list route takes. */
export class PageQueryDto {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(LIMITS.listLimit.min)
  @Max(LIMITS.listLimit.max)
  limit?: number;

  @IsOptional()
  @IsString()
  @MaxLength(512)
  @Matches(/^[A-Za-z0-9_-]+$/, { message: 'cursor is not valid' })
  cursor?: string;
}

/** The filters of the ops lists across all projects (VMs and jobs share one query shape). */
export class OpsListQueryDto extends PageQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.projectId) project?: string;
  @IsOptional() @IsString() @MaxLength(32) status?: string;
  @IsOptional() @IsString() @Matches(LIMITS.zoneId) zone?: string;
  @IsOptional() @IsUUID() resource_id?: string;
}
