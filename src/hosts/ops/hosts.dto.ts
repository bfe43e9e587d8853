import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { LIMITS } from '../../http/validation/limits';
import { ENROLLMENT_TTL_MAX_S } from '../enrollment/enrollment.service';

export class CreateEnrollmentDto {
  /** How long the token may wait for its host: 60 s to 24 h, 15 min when absent. */
  @IsOptional() @IsInt() @Min(60) @Max(ENROLLMENT_TTL_MAX_S) expires_in_s?: number;
}

export class ListHostsQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.opsId, { message: 'cluster_id is not valid' }) cluster_id?: string;
}
