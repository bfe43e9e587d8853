import { Injectable } from '@nestjs/common';
import { DataSource, ObjectLiteral } from 'typeorm';
import { AuditRecord } from '@hcp/domain';
import { keysetPage, Page } from '../platform/persistence/keyset-page';

export interface AuditFilter {
  project?: string;
  actor?: string;
  action?: string;
  /** Any target id (VM, job, path) equal to this. */
  target?: string;
  from?: string;
  to?: string;
}

/** An `audit_log` row: the record, keyed by its event id, with the time as the database returns it. */
type AuditRow = ObjectLiteral &
  Omit<AuditRecord, 'event_id' | 'timestamp' | 'error_code'> & { id: string; created_at: Date };

/** The audit trail for auditors, newest first, from the audit read model. */
@Injectable()
export class AuditQueries {
  constructor(private readonly db: DataSource) {}

  list(filter: AuditFilter, limit: number, cursor?: string): Promise<Page<AuditRecord>> {
    const qb = this.db.createQueryBuilder().select('a.*').from('audit_log', 'a').where('true');
    if (filter.project) qb.andWhere('a.project_id = :project', { project: filter.project });
    if (filter.actor) qb.andWhere('a.actor = :actor', { actor: filter.actor });
    if (filter.action) qb.andWhere('a.action = :action', { action: filter.action });
    if (filter.target)
      qb.andWhere('EXISTS (SELECT 1 FROM jsonb_each_text(a.target) t WHERE t.value = :target)', {
        target: filter.target,
      });
    if (filter.from) qb.andWhere('a.created_at >= :from', { from: filter.from });
    if (filter.to) qb.andWhere('a.created_at < :to', { to: filter.to });
    return keysetPage<AuditRow, AuditRecord>(
      qb as never,
      'a',
      limit,
      cursor,
      (r) => {
        // The audit projection keeps the error code in details (audit_log has no column for it).
        const { error_code, ...details } = r.details;
        return {
          event_id: r.id,
          timestamp: new Date(r.created_at).toISOString(),
          actor: r.actor,
          action: r.action,
          target: r.target,
          project_id: r.project_id,
          result: r.result,
          ...(typeof error_code === 'string' ? { error_code } : {}),
          trace_id: r.trace_id,
          details,
        };
      },
      true,
    );
  }
}
