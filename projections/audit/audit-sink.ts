import type { AuditRecord, MeteringRecord } from '@hcp/domain';
import { MESSAGE_SCHEMA_VERSION, MessagePublisher } from '@hcp/messaging';

/**
 * Where audit records go besides the audit_log table: Kafka (`hcp.audit.v1`) in a deployment, the log
 * in the embedded default. `publish` resolves only once the records are durably handed over, because
 * the audit projection commits its checkpoint right after.
 */
export interface AuditSink {
  publish(records: AuditRecord[]): Promise<void>;
}

export interface MeteringSink {
  publish(records: MeteringRecord[]): Promise<void>;
}

/** Audit and metering records as message envelopes on their topics (key = project id). */
export function publisherSinks(publisher: MessagePublisher): { audit: AuditSink; metering: MeteringSink } {
  return {
    audit: {
      publish: (records) =>
        publisher.publish(
          'audit',
          records.map((r) => ({
            schema_version: MESSAGE_SCHEMA_VERSION,
            event_id: r.event_id,
            type: `audit.${r.action}`,
            occurred_at: r.timestamp,
            project_id: r.project_id,
            trace_id: r.trace_id,
            payload: r,
          })),
        ),
    },
    metering: {
      publish: (records) =>
        publisher.publish(
          'metering',
          records.map((r) => ({
            schema_version: MESSAGE_SCHEMA_VERSION,
            event_id: r.event_id,
            type: r.kind,
            occurred_at: r.effective_at,
            project_id: r.project_id,
            trace_id: null,
            payload: r,
          })),
        ),
    },
  };
}
