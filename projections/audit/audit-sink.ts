import type { AuditRecord } from '@hcp/domain';

/**
 * Where audit records go besides the audit_log table: Kafka (`hcp.audit.v1`) in a deployment, the log
 * in the embedded default. `publish` resolves only once the records are durably handed over, because
 * the audit projection commits its checkpoint right after.
 */
export interface AuditSink {
  publish(records: AuditRecord[]): Promise<void>;
}

/** The embedded default's sink: one JSON log line per record. */
export class LogAuditSink implements AuditSink {
  constructor(private readonly log: (line: Record<string, unknown>) => void) {}

  async publish(records: AuditRecord[]): Promise<void> {
    for (const record of records) this.log({ msg: 'audit', audit: record });
  }
}
