import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { VmState } from '@hcp/domain';

/**
 * One row per VM for list and detail queries. `state` holds the folded aggregate so the projection
 * evolves it with the domain's own `evolveVm`; the other columns are its queryable, tenant-visible part.
 */
@Entity({ name: 'vm_read_model' })
@Index('vm_read_model_project_page', ['project_id', 'created_at', 'id'])
@Index('vm_read_model_project_name', ['project_id', 'name'])
export class VmReadModelRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') project_id!: string;
  @Column('text') name!: string;
  @Column('text') zone!: string;
  @Column('text') image_id!: string;
  @Column('text') flavor_id!: string;
  @Column('text') status!: string;
  @Column('text') desired_state!: string;
  @Column('jsonb') addresses!: VmState['addresses'];
  @Column('jsonb') tags!: Record<string, string>;
  @Column('jsonb') metadata!: Record<string, string>;
  @Column('uuid') last_job_id!: string;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') updated_at!: Date;
  @Column('jsonb') state!: VmState;
  /**
   * presentVm of `state` as JSON text, written with the row: the tenant's reads send it as stored. Built
   * by PostgreSQL per read, the view cost a 50-VM page 0.54 ms of its CPU against 0.14 ms read as text.
   */
  @Column('text') view!: string;
  @Column('bigint') position!: string;
}
