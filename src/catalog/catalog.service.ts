import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  Capabilities,
  invalidField,
  notFound,
  place,
  Placement,
  PlacementCandidate,
  unionCapabilities,
  VmResources,
} from '@hcp/domain';
import { DriverRegistry, OpsCatalogQueries, OpsResource } from '../ops';
import { GroupedCalls } from '../platform/persistence/grouped-calls';
import { CatalogSnapshot, CatalogSnapshots } from './catalog-snapshot';

export interface ZoneView {
  id: string;
  name: string;
  policy: string;
  capabilities: Capabilities;
}

/**
 * The catalog as tenants see it (zones with capabilities, public images, flavors) and the resolution of
 * a create request into resources and a placement. Provider, cluster and template references never
 * leave this class towards a tenant.
 */
@Injectable()
export class CatalogService {
  /** Zones, clusters, images and flavors change a few times a year; a create reads them on every call. */
  private readonly snapshots: CatalogSnapshots;
  /** The catalog's version and the usage of the clusters asked, one statement for the creates of a moment. */
  private readonly versionAndUsage: GroupedCalls<string[], { version: string; usage: UsageRow[] }>;

  constructor(
    private readonly ops: OpsCatalogQueries,
    drivers: DriverRegistry,
    private readonly db: DataSource,
  ) {
    this.snapshots = new CatalogSnapshots(db, drivers);
    this.versionAndUsage = new GroupedCalls(async (clusterIdSets) => {
      const [row] = await this.db.query(
        `SELECT ${CatalogSnapshots.versionSql} AS version,
                (SELECT coalesce(json_agg(json_build_object('cluster_id', cluster_id, 'vcpus', vcpus, 'ram_mb', ram_mb, 'disk_gb', disk_gb)), '[]')
                   FROM cluster_usage WHERE cluster_id = ANY($1)) AS usage`,
        [[...new Set(clusterIdSets.flat())]],
      );
      return row;
    });
  }

  async listZones(): Promise<ZoneView[]> {
    const catalog = await this.snapshots.current();
    return Promise.all(
      catalog.all('zone').map(async (z) => ({
        id: z.id,
        name: z.spec.name,
        policy: z.spec.policy,
        capabilities: unionCapabilities(await this.zoneCapabilities(catalog, z.spec.cluster_ids)),
      })),
    );
  }

  listImages() {
    return this.ops.list('image', { specContains: { visibility: 'public' } });
  }

  listFlavors() {
    return this.ops.list('flavor');
  }

  async image(id: string) {
    const image = await this.ops.find('image', id);
    if (image?.spec.visibility !== 'public') throw notFound('image');
    return image;
  }

  flavor(id: string) {
    return this.ops.get('flavor', id);
  }

  /**
   * What a create request refers to, checked together, and where the VM goes. Unknown references are
   * the request's fault (INVALID_REQUEST naming the field), not a missing resource of the URL.
   */
  async resolveForCreate(
    zoneId: string,
    imageId: string,
    flavorId: string,
  ): Promise<{ resources: VmResources; placement: Placement }> {
    const { catalog, usage } = await this.catalogAndUsage(zoneId);
    const [zone, image, flavor] = [
      catalog.find('zone', zoneId),
      catalog.find('image', imageId),
      catalog.find('flavor', flavorId),
    ];
    if (!zone) throw invalidField('zone', `unknown zone ${JSON.stringify(zoneId)}`);
    if (image?.spec.visibility !== 'public') throw invalidField('image_id', 'unknown image_id');
    if (!flavor) throw invalidField('flavor_id', 'unknown flavor_id');
    const resources = { vcpus: flavor.spec.vcpus, ram_mb: flavor.spec.ram_mb, disk_gb: flavor.spec.disk_gb };
    if (resources.disk_gb < image.spec.min_disk_gb || resources.ram_mb < image.spec.min_ram_mb) {
      throw invalidField('flavor_id', `flavor ${flavor.spec.name} is smaller than image ${image.spec.name} needs`, {
        min_disk_gb: image.spec.min_disk_gb,
        min_ram_mb: image.spec.min_ram_mb,
      });
    }
    const candidates = await this.candidates(catalog, usage, zone.spec.cluster_ids, image.spec.provider_refs);
    return { resources, placement: place(zone.spec.policy, candidates, { zone: zone.id, resources }) };
  }

  /**
   * The catalog at its current version and the usage of the zone's clusters. One round trip when the
   * catalog has not changed since the last call: the version and the usage (of the clusters the last
   * snapshot gives the zone) are read in one statement, shared by the creates asking at the same time
   * (each read after it asked); a new version costs a reload and a second read.
   */
  private async catalogAndUsage(
    zoneId: string,
  ): Promise<{ catalog: CatalogSnapshot; usage: Map<string, VmResources> }> {
    const guess = this.snapshots.peek();
    const row = await this.versionAndUsage.call(guess?.find('zone', zoneId)?.spec.cluster_ids ?? []);
    const catalog = await this.snapshots.atLeast(BigInt(row.version));
    if (catalog === guess) return { catalog, usage: usageMap(row.usage) };
    return { catalog, usage: await this.usage(catalog.find('zone', zoneId)?.spec.cluster_ids ?? []) };
  }

  private async zoneCapabilities(catalog: CatalogSnapshot, clusterIds: string[]): Promise<Capabilities[]> {
    const clusters = catalog.list('cluster', clusterIds).filter((c) => c.spec.enabled);
    return Promise.all(clusters.map((c) => catalog.clusterCapabilities(c.spec.provider_id, c.id)));
  }

  private async candidates(
    catalog: CatalogSnapshot,
    usage: Map<string, VmResources>,
    clusterIds: string[],
    imageRefs: Record<string, string>,
  ): Promise<PlacementCandidate[]> {
    const clusters: Array<OpsResource<'cluster'>> = catalog.list('cluster', clusterIds);
    return Promise.all(
      clusters.map(async (c) => ({
        cluster_id: c.id,
        provider_id: c.spec.provider_id,
        enabled: c.spec.enabled,
        capabilities: await catalog.clusterCapabilities(c.spec.provider_id, c.id),
        capacity: c.spec.capacity,
        used: usage.get(c.id) ?? { vcpus: 0, ram_mb: 0, disk_gb: 0 },
        image_ref: imageRefs[c.id],
      })),
    );
  }

  private async usage(clusterIds: string[]): Promise<Map<string, VmResources>> {
    return usageMap(
      await this.db.query(`SELECT cluster_id, vcpus, ram_mb, disk_gb FROM cluster_usage WHERE cluster_id = ANY($1)`, [
        clusterIds,
      ]),
    );
  }
}

type UsageRow = { cluster_id: string; vcpus: number | string; ram_mb: number | string; disk_gb: number | string };

/** bigint columns arrive as strings from a plain row and as numbers through json_agg. */
function usageMap(rows: UsageRow[]): Map<string, VmResources> {
  return new Map(
    rows.map((r) => [r.cluster_id, { vcpus: Number(r.vcpus), ram_mb: Number(r.ram_mb), disk_gb: Number(r.disk_gb) }]),
  );
}
