import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { QuotaLimits, QuotaState, QuotaUsage } from '@hcp/domain';

/**
 * One row per project that has a quota stream: its limits (null until ops set some) and its usage,
 * next to the folded aggregate state the projection evolves with the domain's own `evolveQuota`.
 * The key is the column `project_id`; it is the `id` property because FoldedStateProjection keys rows
 * by `id`.
 */
@Entity({ name: 'project_quotas' })
export class QuotaReadModelRow {
  @PrimaryColumn('text', { name: 'project_id' }) id!: string;
  @Column('jsonb', { nullable: true }) limits!: QuotaLimits | null;
  @Column('jsonb') usage!: QuotaUsage;
  @Column('jsonb') state!: QuotaState;
  @Column('bigint') position!: string;
}
