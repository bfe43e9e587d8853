import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Capabilities } from '@hcp/providers';

/**
 * The catalog tenants choose from: zones, images and flavors. Provider-side fields (cluster, provider,
 * image references) are internal and never rendered to tenants.
 */
@Entity({ name: 'zones' })
export class ZoneRow {
  @PrimaryColumn('text') id!: string;
  @Column('text') name!: string;
  @Column('text') provider_id!: string;
  @Column('text') provider_type!: string;
  @Column('text') cluster_id!: string;
  @Column('jsonb') capabilities!: Capabilities;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'images' })
export class ImageRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('text', { unique: true }) name!: string;
  @Column('text') os!: string;
  @Column('int') min_disk_gb!: number;
  @Column('int') min_ram_mb!: number;
  @Column('text') visibility!: 'public' | 'private';
  /** cluster id -> template or image reference on that cluster's provider. Internal. */
  @Column('jsonb') provider_refs!: Record<string, string>;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'flavors' })
export class FlavorRow {
  @PrimaryColumn('uuid') id!: string;
  @Column('text', { unique: true }) name!: string;
  @Column('int') vcpus!: number;
  @Column('int') ram_mb!: number;
  @Column('int') disk_gb!: number;
  @Column('jsonb') extras!: Record<string, unknown>;
  @Column('timestamptz') created_at!: Date;
}
