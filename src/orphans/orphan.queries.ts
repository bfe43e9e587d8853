import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { notFound, ORPHAN_UNRESOLVED, OrphanState } from '@hcp/domain';
import { keysetPageSql, Page, SqlConditions } from '../platform/persistence/keyset-page';
import { OrphanView, presentOrphan } from './orphan.presenter';

export interface OrphanFilter {
  provider_id?: string;
  cluster_id?: string;
  /** Unset: the orphans that wait for ops or a job (open, destroying, destroy_failed). */
  status?: string;
}

/** Reads orphans from their read model, newest found first. */
@Injectable()
export class OrphanQueries {
  constructor(private readonly db: DataSource) {}

  async get(id: string): Promise<OrphanView> {
    const [row] = (await this.db.query('SELECT state FROM orphan_read_model WHERE id = $1', [id])) as Array<{
      state: OrphanState;
    }>;
    if (!row) throw notFound('orphan');
    return presentOrphan(row.state);
  }

  list(filter: OrphanFilter, limit: number, cursor?: string): Promise<Page<OrphanView>> {
    const where = new SqlConditions();
    if (filter.provider_id) where.and(`provider_id = ${where.param(filter.provider_id)}`);
    if (filter.cluster_id) where.and(`cluster_id = ${where.param(filter.cluster_id)}`);
    if (filter.status) where.and(`status = ${where.param(filter.status)}`);
    else where.and(`status = ANY(${where.param(ORPHAN_UNRESOLVED)})`);
    return keysetPageSql<{ id: string; created_at: Date; state: OrphanState }, OrphanView>(
      this.db,
      { select: 'id, created_at, state', from: 'orphan_read_model', where },
      limit,
      cursor,
      (row) => presentOrphan(row.state),
    );
  }

  /** Unresolved orphans per provider, for the `hcp_orphans` gauge. */
  async unresolvedByProvider(): Promise<Array<{ provider_id: string; count: number }>> {
    const rows: Array<{ provider_id: string; count: string }> = await this.db.query(
      `SELECT provider_id, count(*)::text AS count FROM orphan_read_model WHERE status = ANY($1) GROUP BY provider_id`,
      [ORPHAN_UNRESOLVED],
    );
    return rows.map((r) => ({ provider_id: r.provider_id, count: Number(r.count) }));
  }
}
