import { EntityManager } from 'typeorm';
import {
  AuditJobInfo,
  AuditRecord,
  auditRecordOf,
  BREAK_GLASS_STREAM_PREFIX,
  CONSOLE_SESSION_STREAM_PREFIX,
  HOST_ENROLLMENT_STREAM_PREFIX,
  HOST_STREAM_PREFIX,
  JOB_STREAM_PREFIX,
  JobQueued,
  ORPHAN_STREAM_PREFIX,
  REQUEST_STREAM_PREFIX,
  VM_STREAM_PREFIX,
} from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { BulkInsert, BulkInserts, bulkInsertBatch, runBulkInserts } from '../runner/bulk-insert';
import { OneStatementBatch } from '../runner/projection';
import { RebuildableProjection } from '../runner/projection-rebuild';
import { AuditSink } from './audit-sink';

const AUDIT_JOBS = new BulkInsert({
  name: 'audit_jobs',
  columns: { job_id: 'uuid', project_id: 'text', type: 'text', resource_id: 'uuid', actor: 'text' },
  key: ['job_id'],
  onConflict: 'nothing',
});
const AUDIT_LOG = new BulkInsert({
  name: 'audit_log',
  columns: {
    id: 'uuid',
    created_at: 'timestamptz',
    actor: 'text',
    action: 'text',
    target: 'jsonb',
    project_id: 'text',
    result: 'text',
    trace_id: 'text',
    details: 'jsonb',
    position: 'bigint',
  },
  key: ['id'],
  onConflict: 'nothing',
});

/**
 * The audit trail: request facts, break-glass uses, job steps, console sessions and observed drift become audit records in `audit_log`
 * and go to the sink (Kafka) before the checkpoint moves, so a crash or a broker outage delays records
 * but loses none (a retried batch is published again: at least once, de-duplicated by event_id).
 */
export class AuditProjection implements RebuildableProjection {
  readonly name = 'audit';
  readonly tables = ['audit_log', 'audit_jobs'];
  readonly streamPrefixes = [
    REQUEST_STREAM_PREFIX,
    BREAK_GLASS_STREAM_PREFIX,
    JOB_STREAM_PREFIX,
    CONSOLE_SESSION_STREAM_PREFIX,
    // Drift the reconciler observed (VmStateObserved, VmVanished); other VM events are not audited.
    VM_STREAM_PREFIX,
    // What ops and the orphan policy did with provider resources that have no live VM.
    ORPHAN_STREAM_PREFIX,
    // Host agents enrolled, revoked and re-keyed, and the enrollment tokens ops created.
    HOST_STREAM_PREFIX,
    HOST_ENROLLMENT_STREAM_PREFIX,
  ];

  constructor(private readonly sink: AuditSink) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    await runBulkInserts(tx, await this.rowsOf(events, tx));
  }

  /** The batch's rows as one statement with the checkpoint's move, after reading what it needs. */
  async oneStatement(events: DecodedEvent[], reader: EntityManager): Promise<OneStatementBatch> {
    return bulkInsertBatch(await this.rowsOf(events, reader));
  }

  /**
   * The batch's rows of `audit_jobs` and `audit_log`, its records published first. The jobs of earlier
   * batches are read through `reader`: rows only this projection writes, so a read outside the batch's
   * transaction finds the same.
   */
  private async rowsOf(events: DecodedEvent[], reader: EntityManager): Promise<BulkInserts> {
    const jobs = await this.earlierJobs(events, reader);
    const newJobs: Array<AuditJobInfo & { job_id: string }> = [];
    const records: Array<{ record: AuditRecord; position: bigint }> = [];
    for (const e of events) {
      if (e.event.type === 'JobQueued') {
        const { job_id, project_id, type, resource_id, actor } = (e.event as JobQueued).data;
        jobs.set(job_id, { project_id, type, resource_id, actor });
        newJobs.push({ job_id, project_id, type, resource_id, actor });
        continue;
      }
      const jobId = e.streamId.startsWith(JOB_STREAM_PREFIX) ? e.streamId.slice(JOB_STREAM_PREFIX.length) : null;
      const job = jobId ? (jobs.get(jobId) ?? null) : null;
      const record = auditRecordOf(
        {
          event: e.event,
          event_id: e.eventId,
          stream_id: e.streamId,
          occurred_at: e.at,
          actor: e.context.actor ?? null,
          trace_id: e.context.trace_id ?? null,
        },
        job,
      );
      if (record) records.push({ record, position: e.position });
    }
    // Publish before writing: this transaction takes no transaction id while it waits for the broker, so
    // a slow or absent broker never holds back the event store's readers (they read below the oldest
    // writing transaction).
    if (records.length) await this.sink.publish(records.map((r) => r.record));
    const log = records.map(({ record: r, position }) => ({
      id: r.event_id,
      created_at: r.timestamp,
      actor: r.actor,
      action: r.action,
      target: r.target,
      project_id: r.project_id,
      result: r.result,
      trace_id: r.trace_id,
      // audit_log has no column of its own for the error code: it is kept in details, and the
      // audit queries give it back as the record's error_code.
      details: r.error_code === undefined ? r.details : { ...r.details, error_code: r.error_code },
      position: position.toString(),
    }));
    return [
      [AUDIT_JOBS, newJobs],
      [AUDIT_LOG, log],
    ];
  }

  /** What the batch's job events need to know of jobs queued in earlier batches: one query for all. */
  private async earlierJobs(events: DecodedEvent[], reader: EntityManager): Promise<Map<string, AuditJobInfo>> {
    const queuedHere = new Set(
      events.filter((e) => e.event.type === 'JobQueued').map((e) => (e.event as JobQueued).data.job_id),
    );
    const wanted = [
      ...new Set(
        events
          .filter((e) => e.streamId.startsWith(JOB_STREAM_PREFIX))
          .map((e) => e.streamId.slice(JOB_STREAM_PREFIX.length)),
      ),
    ].filter((id) => !queuedHere.has(id));
    if (wanted.length === 0) return new Map();
    const rows: Array<AuditJobInfo & { job_id: string }> = await reader.query(
      `SELECT job_id, project_id, type, resource_id, actor FROM audit_jobs WHERE job_id = ANY($1::uuid[])`,
      [wanted],
    );
    return new Map(rows.map(({ job_id, ...info }) => [job_id, info]));
  }
}
