import { IsIn, IsOptional, IsUUID } from 'class-validator';
import { PageQueryDto } from '../http/validation/page-query.dto';

const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;

export class ListJobsQueryDto extends PageQueryDto {
  @IsOptional()
  @IsUUID()
  resource_id?: string;

  @IsOptional()
  @IsIn(JOB_STATUSES)
  status?: (typeof JOB_STATUSES)[number];
}
