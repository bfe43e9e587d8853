import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { invalidField, notFound } from '@hcp/domain';
import { FlavorRow, ImageRow, ZoneRow } from './catalog.entities';

/** Read access to zones, images and flavors for commands and the tenant API. */
@Injectable()
export class CatalogService {
  constructor(private readonly db: DataSource) {}

  listZones(): Promise<ZoneRow[]> {
    return this.db.getRepository(ZoneRow).find({ order: { id: 'ASC' } });
  }

  listImages(): Promise<ImageRow[]> {
    return this.db.getRepository(ImageRow).find({ where: { visibility: 'public' }, order: { name: 'ASC' } });
  }

  listFlavors(): Promise<FlavorRow[]> {
    return this.db.getRepository(FlavorRow).find({ order: { vcpus: 'ASC', ram_mb: 'ASC', name: 'ASC' } });
  }

  async image(id: string): Promise<ImageRow> {
    const row = await this.db.getRepository(ImageRow).findOneBy({ id, visibility: 'public' });
    if (!row) throw notFound('image');
    return row;
  }

  async flavor(id: string): Promise<FlavorRow> {
    const row = await this.db.getRepository(FlavorRow).findOneBy({ id });
    if (!row) throw notFound('flavor');
    return row;
  }

  /**
   * What a create request refers to, checked together. Unknown references are the request's fault
   * (INVALID_REQUEST naming the field), not a missing resource of the URL.
   */
  async resolveForCreate(zoneId: string, imageId: string, flavorId: string): Promise<{ zone: ZoneRow; image: ImageRow; flavor: FlavorRow; imageRef: string }> {
    const [zone, image, flavor] = await Promise.all([
      this.db.getRepository(ZoneRow).findOneBy({ id: zoneId }),
      this.db.getRepository(ImageRow).findOneBy({ id: imageId, visibility: 'public' }),
      this.db.getRepository(FlavorRow).findOneBy({ id: flavorId }),
    ]);
    if (!zone) throw invalidField('zone', `unknown zone ${JSON.stringify(zoneId)}`);
    if (!image) throw invalidField('image_id', 'unknown image_id');
    if (!flavor) throw invalidField('flavor_id', 'unknown flavor_id');
    const imageRef = image.provider_refs[zone.cluster_id];
    if (!imageRef) throw invalidField('image_id', `image ${image.name} is not available in zone ${zone.id}`);
    if (flavor.disk_gb < image.min_disk_gb || flavor.ram_mb < image.min_ram_mb) {
      throw invalidField('flavor_id', `flavor ${flavor.name} is smaller than image ${image.name} needs`, {
        min_disk_gb: image.min_disk_gb,
        min_ram_mb: image.min_ram_mb,
      });
    }
    return { zone, image, flavor, imageRef };
  }
}
