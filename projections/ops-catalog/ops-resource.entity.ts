import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { OpsKind } from '@hcp/domain';

/** One row per provider, cluster, zone, image or flavor: the folded aggregate of its stream. */
@Entity({ name: 'ops_resources' })
export class OpsResourceRow {
  @PrimaryColumn('text') kind!: OpsKind;
  @PrimaryColumn('text') id!: string;
  @Column('text') name!: string;
  @Column('jsonb') spec!: Record<string, unknown>;
  @Column('boolean') deleted!: boolean;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') updated_at!: Date;
  @Column('bigint') position!: string;
}
