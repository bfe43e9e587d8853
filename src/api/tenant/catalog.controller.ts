import { Controller, Get, Param } from '@nestjs/common';

import { FlavorRow, ImageRow, ZoneRow } from '../../catalog/catalog.entities';
import { CatalogService } from '../../catalog/catalog.service';
import { UuidPipe } from './params';

/** Zones, images and flavors as tenants see them: no provider, cluster or template reference. */
@Controller('v1')
export class CatalogController {
  constructor(private readonly catalog: CatalogService) {}

  @Get('zones')
  async zones() {
    return { items: (await this.catalog.listZones()).map(presentZone), next_cursor: null };
  }

  @Get('images')
  async images() {
    return { items: (await this.catalog.listImages()).map(presentImage), next_cursor: null };
  }

  @Get('images/:id')
  async image(@Param('id', UuidPipe) id: string) {
    return presentImage(await this.catalog.image(id));
  }

  @Get('flavors')
  async flavors() {
    return { items: (await this.catalog.listFlavors()).map(presentFlavor), next_cursor: null };
  }

  @Get('flavors/:id')
  async flavor(@Param('id', UuidPipe) id: string) {
    return presentFlavor(await this.catalog.flavor(id));
  }
}

const presentZone = (z: ZoneRow) => ({ id: z.id, name: z.name, capabilities: z.capabilities });
const presentImage = (i: ImageRow) => ({
  id: i.id,
  name: i.name,
  os: i.os,
  min_disk_gb: i.min_disk_gb,
  min_ram_mb: i.min_ram_mb,
  visibility: i.visibility,
  created_at: i.created_at.toISOString(),
});
const presentFlavor = (f: FlavorRow) => ({
  id: f.id,
  name: f.name,
  vcpus: f.vcpus,
  ram_mb: f.ram_mb,
  disk_gb: f.disk_gb,
  extras: f.extras,
  created_at: f.created_at.toISOString(),
});
