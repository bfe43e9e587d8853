import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The durable work queue behind the sagas. A row exists for every accepted job; a worker (in-process
 * today, a host agent later) owns it while `lease_expires_at` lies in the future and renews it while the
 * provider call runs. The job's history itself lives in its event stream, not here.
 */
@Entity({ name: 'job_queue' })
@Index('job_queue_due', ['status', 'available_at'])
export class JobQueueRow {
  @PrimaryColumn('uuid') job_id!: string;
  @Column('text') project_id!: string;
  @Column('text') type!: string;
  @Column('uuid') resource_id!: string;
  /** queued | leased | done */
  @Column('text') status!: string;
  @Column('timestamptz') available_at!: Date;
  @Column('text', { nullable: true }) lease_owner!: string | null;
  @Column('timestamptz', { nullable: true }) lease_expires_at!: Date | null;
  @Column('int', { default: 0 }) leases!: number;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') updated_at!: Date;
}
