import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { invalidField, MeteringRecord } from '@hcp/domain';
import { Page } from '../platform/persistence/keyset-page';

/** Metering records in the order they happened (the log's order), for billing and ops. */
@Injectable()
export class MeteringQueries {
  constructor(private readonly db: DataSource) {}

  async list(filter: { project?: string; vm?: string }, limit: number, cursor?: string): Promise<Page<MeteringRecord>> {
    const after = cursor ? decode(cursor) : null;
    const rows: Array<MeteringRecord & { position: string; effective_at: Date }> = await this.db.query(
      `SELECT event_id, kind, project_id, vm_id, zone, flavor_id, resources, effective_at, position FROM metering_records
       WHERE ($1::text IS NULL OR project_id = $1) AND ($2::uuid IS NULL OR vm_id = $2)
         AND ($3::bigint IS NULL OR (position, event_id) > ($3::bigint, $4::text))
       ORDER BY position, event_id LIMIT $5`,
      [filter.project ?? null, filter.vm ?? null, after?.position ?? null, after?.eventId ?? '', limit + 1],
    );
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return {
      items: items.map(({ position: _position, effective_at, ...r }) => ({
        ...r,
        effective_at: new Date(effective_at).toISOString(),
      })),
      next_cursor:
        rows.length > limit && last
          ? Buffer.from(JSON.stringify([last.position, last.event_id])).toString('base64url')
          : null,
    };
  }
}

function decode(cursor: string): { position: string; eventId: string } {
  try {
    const [position, eventId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    if (!/^\d{1,18}$/.test(position) || typeof eventId !== 'string' || !/^[0-9a-f-]{36}(:on)?$/.test(eventId))
      throw new Error();
    return { position, eventId };
  } catch {
    throw invalidField('cursor', 'cursor is not valid');
  }
}
