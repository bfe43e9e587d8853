import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { notFound } from '@hcp/domain';
import { presentVm, VmReadModelRow, VmView } from '@hcp/projections';
import {
  keysetPageJsonText,
  keysetPageSql,
  Page,
  SqlConditions,
  SqlRunner,
  textRows,
} from '../platform/persistence/keyset-page';
import { JsonText } from '../http/json-text';

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
 * even its query runner per call, cost more than the query itself. The tenant's reads answer the view's
 * JSON text the projection stored (`view`), as it comes.
 */
@Injectable()
export class VmQueries {
  private readonly sql: SqlRunner;
  private readonly text: SqlRunner;

  constructor(db: DataSource) {
    const pool = (db.driver as PostgresDriver).master as Pool;
    this.sql = { query: async (text, params) => (await pool.query(text, params)).rows };
    this.text = textRows(pool);
  }

  async get(projectId: string, vmId: string): Promise<JsonText<VmView>> {
    const [row] = (await this.text.query(`SELECT view FROM vm_read_model WHERE id = $1 AND project_id = $2`, [
      vmId,
      projectId,
    ])) as Array<{ view: string }>;
    if (!row) throw notFound('VM');
    return new JsonText(row.view);
  }

  async list(projectId: string, filter: VmFilter, limit: number, cursor?: string): Promise<JsonText<Page<VmView>>> {
    const from = { item: 'view', from: 'vm_read_model', where: conditionsOf({ ...filter, projectId }) };
    return new JsonText(await keysetPageJsonText(this.text, from, limit, cursor));
  }

  /** Across projects, for ops: the same filters plus the project, and where each VM was placed. */
  listForOps(
    filter: VmFilter & { projectId?: string },
    limit: number,
    cursor?: string,
  ): Promise<Page<VmView & { placement: { provider_id: string; cluster_id: string } }>> {
    return keysetPageSql<PageRow, VmView & { placement: { provider_id: string; cluster_id: string } }>(
      this.sql,
      { select: 'id, created_at, state', from: 'vm_read_model', where: conditionsOf(filter) },
      limit,
      cursor,
      (row) => ({
        ...presentVm(row.state),
        placement: { provider_id: row.state.placement.provider_id, cluster_id: row.state.placement.cluster_id },
      }),
    );
  }
}

function conditionsOf(filter: VmFilter & { projectId?: string }): SqlConditions {
  const where = new SqlConditions();
  if (filter.projectId) where.and(`project_id = ${where.param(filter.projectId)}`);
  if (filter.status) where.and(`status = ${where.param(filter.status)}`);
  else where.and(`status <> 'deleted'`);
  if (filter.zone) where.and(`zone = ${where.param(filter.zone)}`);
  if (filter.name) where.and(`name = ${where.param(filter.name)}`);
  for (const tag of filter.tags ?? [])
    where.and(`tags @> ${where.param(JSON.stringify({ [tag.key]: tag.value }))}::jsonb`);
  return where;
}
