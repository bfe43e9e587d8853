import { invalidField, Placement, VmResources } from '@hcp/domain';
import { CatalogService } from '../../src/catalog';

/** A zone, the images it holds (image id -> the image's reference there) and the one cluster it places on. */
export interface FakeZone {
  provider_id: string;
  cluster_id: string;
  images: Record<string, string>;
}

export interface FakeCatalog {
  zones: Record<string, FakeZone>;
  flavors: Record<string, VmResources>;
}

/**
 * CatalogService.resolveForCreate over a fixed catalog in memory, without a database: a flavor's size
 * and the zone's one cluster. Unknown references are refused as the real one refuses them
 * (INVALID_REQUEST naming the field). Records every call.
 */
export class FakeCatalogResolver implements Pick<CatalogService, 'resolveForCreate'> {
  readonly calls: Array<{ zone: string; image_id: string; flavor_id: string }> = [];

  constructor(private readonly catalog: FakeCatalog) {}

  async resolveForCreate(
    zoneId: string,
    imageId: string,
    flavorId: string,
  ): Promise<{ resources: VmResources; placement: Placement }> {
    this.calls.push({ zone: zoneId, image_id: imageId, flavor_id: flavorId });
    const zone = Object.hasOwn(this.catalog.zones, zoneId) ? this.catalog.zones[zoneId] : undefined;
    if (!zone) throw invalidField('zone', `unknown zone ${JSON.stringify(zoneId)}`);
    const imageRef = Object.hasOwn(zone.images, imageId) ? zone.images[imageId] : undefined;
    if (imageRef === undefined) throw invalidField('image_id', 'unknown image_id');
    const flavor = Object.hasOwn(this.catalog.flavors, flavorId) ? this.catalog.flavors[flavorId] : undefined;
    if (!flavor) throw invalidField('flavor_id', 'unknown flavor_id');
    return {
      resources: { vcpus: flavor.vcpus, ram_mb: flavor.ram_mb, disk_gb: flavor.disk_gb },
      placement: { provider_id: zone.provider_id, cluster_id: zone.cluster_id, image_ref: imageRef },
    };
  }
}
