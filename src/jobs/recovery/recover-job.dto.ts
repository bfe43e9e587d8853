import { IsIn, IsString, Length, Matches } from 'class-validator';
import { JOB_RECOVERY_ACTIONS, JOB_RECOVERY_REASON_MAX, type JobRecoveryAction } from '@hcp/domain';

export class RecoverJobDto {
  @IsIn(JOB_RECOVERY_ACTIONS)
  action!: JobRecoveryAction;

  /** Why ops act: kept in the job's history and the audit trail. */
  @IsString()
  @Length(1, JOB_RECOVERY_REASON_MAX)
  @Matches(/\S/, { message: 'reason must not be blank' })
  reason!: string;
}
