import { Controller, Get, Param } from '@nestjs/common';
import { CatalogService } from './catalog.service';
import { OpsResource } from '../ops';
import { UuidPipe } from '../http/validation/path-params';

/** Zones, images and flavors as tenants see them: no provider, cluster or template reference. */
@Controller('v1')
export class CatalogController {
  constructor(private readonly catalog: CatalogService) {}

  @Get('zones')
  async zones() {
    return { items: await this.catalog.listZones(), next_cursor: null };
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

const presentImage = ({ id, spec, created_at }: OpsResource<'image'>) => ({
  id,
  name: spec.name,
  os: spec.os,
  min_disk_gb: spec.min_disk_gb,
  min_ram_mb: spec.min_ram_mb,
  visibility: spec.visibility,
  created_at,
});

const presentFlavor = ({ id, spec, created_at }: OpsResource<'flavor'>) => ({
  id,
  name: spec.name,
  vcpus: spec.vcpus,
  ram_mb: spec.ram_mb,
  disk_gb: spec.disk_gb,
  extras: spec.extras,
  created_at,
});
