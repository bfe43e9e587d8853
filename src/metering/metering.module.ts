import { Module } from '@nestjs/common';
import { MeteringController } from './metering.controller';
import { MeteringQueries } from './metering.queries';
import { UsageController } from './usage.controller';
import { UsageQueries } from './usage.queries';

/** Metering records for billing, read from the metering projection's table, and the usage they add up to. */
@Module({
  controllers: [MeteringController, UsageController],
  providers: [MeteringQueries, UsageQueries],
})
export class MeteringModule {}
