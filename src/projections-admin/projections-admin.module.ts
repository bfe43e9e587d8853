import { Module } from '@nestjs/common';
import { DeadLettersController } from './dead-letters.controller';
import { DeadLettersService } from './dead-letters.service';
import { ProjectionHost } from './projection-host';
import { ProjectionsController } from './projections.controller';
import { ProjectionsService } from './projections.service';

/**
 * Runs the projections, shows their positions to ops, rebuilds read models beside the live tables, and
 * lets ops retry or skip the events a projection could not apply (dead letters).
 */
@Module({
  controllers: [ProjectionsController, DeadLettersController],
  providers: [ProjectionHost, ProjectionsService, DeadLettersService],
  exports: [ProjectionHost],
})
export class ProjectionsAdminModule {}
