import type { AuditRecord } from '@hcp/domain';

/**
 * Where audit records go besides the audit_log table: Kafka (`hcp.audit.v1`) in a deployment, the log
 * in the embedded default. `publish` resolves only once the records are durably handed over, because
 * the audit projection commits its checkpoint right after.
 */
export interface AuditSink {
  publish(records: AuditRecord[]): Promise<void>;
}

/** The embedded default's sink for audit or metering records: one JSON log line per record. */
export class LogSink {
  constructor(
    private readonly kind: 'audit' | 'metering',
    private readonly log: (line: Record<string, unknown>) => void,
  ) {}

  async publish(records: object[]): Promise<void> {
    for (const record of records) this.log({ msg: this.kind, [this.kind]: record });
  }
}
