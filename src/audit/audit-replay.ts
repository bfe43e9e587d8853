import { AuditJobInfo, AuditRecord, auditRecordOf, JOB_STREAM_PREFIX, JobQueued, UpcasterRegistry } from '@hcp/domain';
import { DomainEventCodec, EventStore, START_POSITION } from '@hcp/eventstore';

export interface ReplayFilter {
  from?: Date;
  to?: Date;
  project?: string;
}

const PAGE = 1000;

/**
 * The audit trail straight from the event store, for auditors who trust the log over any read model:
 * the same mapping as the audit projection, applied to every event from the beginning.
 */
export async function* replayAudit(
  store: EventStore,
  upcasters: UpcasterRegistry,
  filter: ReplayFilter,
): AsyncGenerator<AuditRecord> {
  const codec = new DomainEventCodec(upcasters);
  const jobs = new Map<string, AuditJobInfo>();
  for (let after: bigint | 'start' = 'start'; ; ) {
    const page = await store.readAll(after, PAGE);
    if (page.length === 0) return;
    for (const recorded of page) {
      if (!codec.knows(recorded)) continue;
      const e = codec.decode(recorded);
      if (e.event.type === 'JobQueued') {
        const { job_id, project_id, type, resource_id, actor } = (e.event as JobQueued).data;
        jobs.set(job_id, { project_id, type, resource_id, actor });
        continue;
      }
      const job = e.streamId.startsWith(JOB_STREAM_PREFIX)
        ? (jobs.get(e.streamId.slice(JOB_STREAM_PREFIX.length)) ?? null)
        : null;
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
      if (!record) continue;
      const at = new Date(record.timestamp);
      if (
        (filter.from && at < filter.from) ||
        (filter.to && at >= filter.to) ||
        (filter.project && record.project_id !== filter.project)
      )
        continue;
      yield record;
    }
    after = page[page.length - 1].position;
    if (after === START_POSITION) return;
  }
}
