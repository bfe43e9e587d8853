import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { ORPHAN_STATUSES } from '@hcp/domain';
import { LIMITS } from '../http/validation/limits';
import { PageQueryDto } from '../http/validation/page-query.dto';

export class ListOrphansQueryDto extends PageQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.opsId, { message: 'provider_id is not valid' }) provider_id?: string;
  @IsOptional() @IsString() @Matches(LIMITS.opsId, { message: 'cluster_id is not valid' }) cluster_id?: string;
  @IsOptional() @IsIn(ORPHAN_STATUSES) status?: string;
}
