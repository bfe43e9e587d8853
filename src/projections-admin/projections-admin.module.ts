import { Module } from '@nestjs/common';
import { ProjectionHost } from './projection-host';
import { ProjectionsController } from './projections.controller';
import { ProjectionsService } from './projections.service';

/** Runs the projections, shows their positions to ops and rebuilds read models beside the live tables. */
@Module({
  controllers: [ProjectionsController],
  providers: [ProjectionHost, ProjectionsService],
  exports: [ProjectionHost],
})
export class ProjectionsAdminModule {}
