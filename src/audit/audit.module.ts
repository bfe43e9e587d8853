import { Module } from '@nestjs/common';
import { AuditController } from './audit.controller';
import { AuditQueries } from './audit.queries';

/** The audit trail for security auditors, read from the audit projection's table. */
@Module({
  controllers: [AuditController],
  providers: [AuditQueries],
})
export class AuditModule {}
