import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Capabilities, invalidField, notFound, place, Placement, PlacementCandidate, unionCapabilities, VmResources } from '@hcp/domain';
import { OpsCatalogQueries, OpsResource } from '../ops/ops-catalog.queries';
import { DriverRegistry } from '../providers/driver-registry';

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
  constructor(
    private readonly ops: OpsCatalogQueries,
    private readonly drivers: DriverRegistry,
    private readonly db: DataSource,
  ) {}

  async listZones(): Promise<ZoneView[]> {
    const zones = await this.ops.list('zone');
    return Promise.all(zones.map(async (z) => ({ id: z.id, name: z.spec.name, policy: z.spec.policy, capabilities: unionCapabilities(await this.zoneCapabilities(z.spec.cluster_ids)) })));
  }

  listImages() {
    return this.ops.list('image', { specContains: { visibility: 'public' } });
  }

  listFlavors() {
    return this.ops.list('flavor');
  }

  async image(id: string) {
    const image = await this.ops.find('image', id);
    if (!image || image.spec.visibility !== 'public') throw notFound('image');
    return image;
  }

  flavor(id: string) {
    return this.ops.get('flavor', id);
  }

  /**
   * What a create request refers to, checked together, and where the VM goes. Unknown references are
   * the request's fault (INVALID_REQUEST naming the field), not a missing resource of the URL.
   */
  async resolveForCreate(zoneId: string, imageId: string, flavorId: string): Promise<{ resources: VmResources; placement: Placement }> {
    const [zone, image, flavor] = await Promise.all([this.ops.find('zone', zoneId), this.ops.find('image', imageId), this.ops.find('flavor', flavorId)]);
    if (!zone) throw invalidField('zone', `unknown zone ${JSON.stringify(zoneId)}`);
    if (!image || image.spec.visibility !== 'public') throw invalidField('image_id', 'unknown image_id');
    if (!flavor) throw invalidField('flavor_id', 'unknown flavor_id');
    const resources = { vcpus: flavor.spec.vcpus, ram_mb: flavor.spec.ram_mb, disk_gb: flavor.spec.disk_gb };
    if (resources.disk_gb < image.spec.min_disk_gb || resources.ram_mb < image.spec.min_ram_mb) {
      throw invalidField('flavor_id', `flavor ${flavor.spec.name} is smaller than image ${image.spec.name} needs`, { min_disk_gb: image.spec.min_disk_gb, min_ram_mb: image.spec.min_ram_mb });
    }
    const candidates = await this.candidates(zone.spec.cluster_ids, image.spec.provider_refs);
    return { resources, placement: place(zone.spec.policy, candidates, { zone: zone.id, resources }) };
  }

  private async zoneCapabilities(clusterIds: string[]): Promise<Capabilities[]> {
    const clusters = (await this.ops.list('cluster', { ids: clusterIds })).filter((c) => c.spec.enabled);
    return Promise.all(clusters.map((c) => this.drivers.clusterCapabilities(c.spec.provider_id, c.id)));
  }

  private async candidates(clusterIds: string[], imageRefs: Record<string, string>): Promise<PlacementCandidate[]> {
    const clusters: Array<OpsResource<'cluster'>> = await this.ops.list('cluster', { ids: clusterIds });
    const usage = await this.usage(clusters.map((c) => c.id));
    return Promise.all(
      clusters.map(async (c) => ({
        cluster_id: c.id,
        provider_id: c.spec.provider_id,
        enabled: c.spec.enabled,
        capabilities: await this.drivers.clusterCapabilities(c.spec.provider_id, c.id),
        capacity: c.spec.capacity,
        used: usage.get(c.id) ?? { vcpus: 0, ram_mb: 0, disk_gb: 0 },
        image_ref: imageRefs[c.id],
      })),
    );
  }

  private async usage(clusterIds: string[]): Promise<Map<string, VmResources>> {
    const rows = await this.db.query(`SELECT cluster_id, vcpus, ram_mb, disk_gb FROM cluster_usage WHERE cluster_id = ANY($1)`, [clusterIds]);
    return new Map(rows.map((r: { cluster_id: string; vcpus: number; ram_mb: string; disk_gb: string }) => [r.cluster_id, { vcpus: r.vcpus, ram_mb: Number(r.ram_mb), disk_gb: Number(r.disk_gb) }]));
  }
}
