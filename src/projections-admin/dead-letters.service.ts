import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { DeadLetter, DeadLetterStatus, retryDeadLetter, skipDeadLetter } from '@hcp/projections';
import { keysetPageSql, Page, SqlConditions } from '../platform/persistence/keyset-page';
import { EVENT_STORE } from '../platform/tokens';
import { ProjectionHost } from './projection-host';

/** A dead letter as ops see it (positions and revisions as strings: they are 64-bit). */
export interface DeadLetterView {
  id: string;
  projection: string;
  position: string;
  event_id: string;
  stream_id: string;
  stream_revision: string;
  event_type: string;
  error: string;
  attempts: number;
  status: DeadLetterStatus;
  first_failed_at: string;
  last_failed_at: string;
  updated_at: string;
}

export function deadLetterView(row: DeadLetter): DeadLetterView {
  return {
    id: row.id,
    projection: row.projection,
    position: String(row.position),
    event_id: row.event_id,
    stream_id: row.stream_id,
    stream_revision: String(row.stream_revision),
    event_type: row.event_type,
    error: row.error,
    attempts: row.attempts,
    status: row.status,
    first_failed_at: new Date(row.first_failed_at).toISOString(),
    last_failed_at: new Date(row.last_failed_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** Events the projections could not apply: the list, and the ops decisions on each (retry, skip). */
@Injectable()
export class DeadLettersService {
  constructor(
    private readonly db: DataSource,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
    private readonly host: ProjectionHost,
  ) {}

  /** Newest first (by first failure), keyset paged like the other ops lists. */
  list(
    filter: { projection?: string; status?: DeadLetterStatus },
    limit: number,
    cursor?: string,
  ): Promise<Page<DeadLetterView>> {
    const where = new SqlConditions();
    if (filter.projection) where.and(`projection = ${where.param(filter.projection)}`);
    if (filter.status) where.and(`status = ${where.param(filter.status)}`);
    return keysetPageSql<DeadLetter & { created_at: Date }, DeadLetterView>(
      this.db,
      {
        select: '*',
        // The paging key is (created_at, id); a letter's creation is its first failure.
        from: '(SELECT *, first_failed_at AS created_at FROM projection_dead_letters) d',
        where,
      },
      limit,
      cursor,
      deadLetterView,
    );
  }

  /** Open dead letters per projection, for the projections' ops view. */
  async openCounts(): Promise<Map<string, number>> {
    const rows: Array<{ projection: string; open: number }> = await this.db.query(
      `SELECT projection, count(*)::int AS open FROM projection_dead_letters WHERE status = 'open' GROUP BY projection`,
    );
    return new Map(rows.map((r) => [r.projection, r.open]));
  }

  /** Re-applies the letter's event through its live projection now: resolved, or open with the new error. */
  async retry(id: string): Promise<DeadLetterView> {
    const projections = await this.host.liveProjections();
    const { letter } = await retryDeadLetter(
      this.db,
      this.store,
      this.codec,
      (name) => projections.find((p) => p.name === name),
      id,
    );
    return deadLetterView(letter);
  }

  /** Ops decided the event is never applied (the request itself is in the audit trail). */
  async skip(id: string): Promise<DeadLetterView> {
    return deadLetterView(await skipDeadLetter(this.db, id));
  }
}
