import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { notFound } from '@hcp/domain';
import { VmReadModelRow } from '@hcp/projections';
import { keysetPageSql, Page, SqlConditions, SqlRunner } from '../platform/persistence/keyset-page';
import { presentVm, VmView } from './vm.presenter';

type PageRow = Pick<VmReadModelRow, 'id' | 'created_at' | 'state'>;

export interface VmFilter {
  zone?: string;
  status?: string;
  tags?: Array<{ key: string; value: string }>;
  name?: string;
}

/**
 * Reads VMs from the read model only. Deleted VMs are listed only when asked for by status. Plain SQL
 * on the data source's own pool (the two hottest reads of the API): TypeORM's statement building, and
 * even its query runner per call, cost more than the query itself.
 */
@Injectable()
export class VmQueries {
  private readonly sql: SqlRunner;

  constructor(db: DataSource) {
    const pool = (db.driver as PostgresDriver).master as Pool;
    this.sql = { query: async (text, params) => (await pool.query(text, params)).rows };
  }

  async get(projectId: string, vmId: string): Promise<VmView> {
    const [row] = (await this.sql.query('SELECT state FROM vm_read_model WHERE id = $1 AND project_id = $2', [
      vmId,
      projectId,
    ])) as Array<Pick<VmReadModelRow, 'state'>>;
    if (!row) throw notFound('VM');
    return presentVm(row.state);
  }

  list(projectId: string, filter: VmFilter, limit: number, cursor?: string): Promise<Page<VmView>> {
    return this.page({ ...filter, projectId }, limit, cursor, (row) => presentVm(row.state));
  }

  /** Across projects, for ops: the same filters plus the project, and where each VM was placed. */
  listForOps(
    filter: VmFilter & { projectId?: string },
    limit: number,
    cursor?: string,
  ): Promise<Page<VmView & { placement: { provider_id: string; cluster_id: string } }>> {
    return this.page(filter, limit, cursor, (row) => ({
      ...presentVm(row.state),
      placement: { provider_id: row.state.placement.provider_id, cluster_id: row.state.placement.cluster_id },
    }));
  }

  private page<T>(
    filter: VmFilter & { projectId?: string },
    limit: number,
    cursor: string | undefined,
    present: (row: PageRow) => T,
  ): Promise<Page<T>> {
    const where = new SqlConditions();
    if (filter.projectId) where.and(`project_id = ${where.param(filter.projectId)}`);
    if (filter.status) where.and(`status = ${where.param(filter.status)}`);
    else where.and(`status <> 'deleted'`);
    if (filter.zone) where.and(`zone = ${where.param(filter.zone)}`);
    if (filter.name) where.and(`name = ${where.param(filter.name)}`);
    for (const tag of filter.tags ?? [])
      where.and(`tags @> ${where.param(JSON.stringify({ [tag.key]: tag.value }))}::jsonb`);
    return keysetPageSql(
      this.sql,
      { select: 'id, created_at, state', from: 'vm_read_model', where },
      limit,
      cursor,
      present,
    );
  }
}
