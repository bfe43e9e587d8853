import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Last event position a projection has applied; written in the same transaction as its rows. */
@Entity({ name: 'projection_checkpoints' })
export class ProjectionCheckpoint {
  @PrimaryColumn('text') name!: string;
  @Column('bigint') position!: string;
  @Column('timestamptz') updated_at!: Date;
}
