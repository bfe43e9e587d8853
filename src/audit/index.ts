// The audit context as the application sees it.
export { AuditModule } from './audit.module';
export { replayAudit } from './audit-replay';
