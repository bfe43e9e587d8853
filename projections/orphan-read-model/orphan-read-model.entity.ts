import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { OrphanState } from '@hcp/domain';

/**
 * One row per orphan (a provider resource carrying an HCP id without a live VM) for the ops list.
 * `state` is the folded orphan; `created_at` is when it was first found, the list's order.
 */
@Entity({ name: 'orphan_read_model' })
@Index('orphan_read_model_page', ['created_at', 'id'])
@Index('orphan_read_model_cluster_status', ['cluster_id', 'status'])
@Index('orphan_read_model_provider_status', ['provider_id', 'status'])
export class OrphanReadModelRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') provider_id!: string;
  @Column('text') cluster_id!: string;
  @Column('text') hcp_id!: string;
  @Column('text') status!: string;
  @Column('text') hcp_record!: string;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') updated_at!: Date;
  @Column('jsonb') state!: OrphanState;
  @Column('bigint') position!: string;
}
