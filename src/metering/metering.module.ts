import { Module } from '@nestjs/common';
import { MeteringController } from './metering.controller';
import { MeteringQueries } from './metering.queries';

/** Metering records for billing, read from the metering projection's table. */
@Module({
  controllers: [MeteringController],
  providers: [MeteringQueries],
})
export class MeteringModule {}
