import { Module } from '@nestjs/common';
import { OpsModule } from '../ops';
import { CatalogController } from './catalog.controller';
import { CatalogService } from './catalog.service';

/** What tenants may choose from (zones, images, flavors), and how a create's choices become a placement. */
@Module({
  imports: [OpsModule],
  controllers: [CatalogController],
  providers: [CatalogService],
  exports: [CatalogService],
})
export class CatalogModule {}
