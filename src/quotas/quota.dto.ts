import { IsInt, Max, Min } from 'class-validator';
import type { QuotaLimits } from '@hcp/domain';

/** Large enough for any real project (2^31 - 1 MB of RAM is 2 PiB), small enough to add up exactly. */
export const QUOTA_LIMIT_MAX = 2_147_483_647;

/** `PUT /v1/ops/projects/{p}/quotas`: all four limits, integers >= 0; unknown fields are refused. */
export class SetQuotaDto implements QuotaLimits {
  @IsInt()
  @Min(0)
  @Max(QUOTA_LIMIT_MAX)
  instances!: number;

  @IsInt()
  @Min(0)
  @Max(QUOTA_LIMIT_MAX)
  vcpus!: number;

  @IsInt()
  @Min(0)
  @Max(QUOTA_LIMIT_MAX)
  ram_mb!: number;

  @IsInt()
  @Min(0)
  @Max(QUOTA_LIMIT_MAX)
  disk_gb!: number;
}
