import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { HcpErrorShape, JobState } from '@hcp/domain';

/** One row per job for list and detail queries; `state` is the folded job aggregate. */
@Entity({ name: 'job_read_model' })
@Index('job_read_model_project_page', ['project_id', 'created_at', 'id'])
@Index('job_read_model_resource', ['project_id', 'resource_id'])
export class JobReadModelRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') project_id!: string;
  @Column('text') type!: string;
  @Column('text') status!: string;
  @Column('uuid') resource_id!: string;
  @Column('int') attempts!: number;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz', { nullable: true }) started_at!: Date | null;
  @Column('timestamptz', { nullable: true }) finished_at!: Date | null;
  @Column('jsonb', { nullable: true }) error!: HcpErrorShape | null;
  @Column('text') trace_id!: string;
  @Column('jsonb') state!: JobState;
  @Column('bigint') position!: string;
}
