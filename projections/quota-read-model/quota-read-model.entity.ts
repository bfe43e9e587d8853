import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { QuotaLimits, QuotaUsage } from '@hcp/domain';

/**
 * One row per project that has a quota stream: its limits (null until ops set some), its usage and when
 * either last changed. Each VM's reservation is a row of `project_quota_reservations`, so this row stays
 * the same size however many VMs the project has. The key is the column `project_id`, property `id`.
 */
@Entity({ name: 'project_quotas' })
export class QuotaReadModelRow {
  @PrimaryColumn('text', { name: 'project_id' }) id!: string;
  @Column('jsonb', { nullable: true }) limits!: QuotaLimits | null;
  @Column('jsonb') usage!: QuotaUsage;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
  @Column('bigint') position!: string;
}
