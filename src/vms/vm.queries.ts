import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { notFound } from '@hcp/domain';
import { VmReadModelRow } from '@hcp/projections/vm-read-model/vm-read-model.entity';
import { keysetPage, Page } from '../queries/keyset-page';
import { presentVm, VmView } from './vm.presenter';

export interface VmFilter {
  zone?: string;
  status?: string;
  tags?: Array<{ key: string; value: string }>;
  name?: string;
}

/** Reads VMs from the read model only. Deleted VMs are listed only when asked for by status. */
@Injectable()
export class VmQueries {
  constructor(private readonly db: DataSource) {}

  async get(projectId: string, vmId: string): Promise<VmView> {
    const row = await this.db.getRepository(VmReadModelRow).findOne({ where: { id: vmId, project_id: projectId }, select: { id: true, state: true } });
    if (!row) throw notFound('VM');
    return presentVm(row.state);
  }

  list(projectId: string, filter: VmFilter, limit: number, cursor?: string): Promise<Page<VmView>> {
    return this.page({ ...filter, projectId }, limit, cursor, (row) => presentVm(row.state));
  }

  /** Across projects, for ops: the same filters plus the project, and where each VM was placed. */
  listForOps(filter: VmFilter & { projectId?: string }, limit: number, cursor?: string): Promise<Page<VmView & { placement: { provider_id: string; cluster_id: string } }>> {
    return this.page(filter, limit, cursor, (row) => ({
      ...presentVm(row.state),
      placement: { provider_id: row.state.placement.provider_id, cluster_id: row.state.placement.cluster_id },
    }));
  }

  private page<T>(filter: VmFilter & { projectId?: string }, limit: number, cursor: string | undefined, present: (row: VmReadModelRow) => T): Promise<Page<T>> {
    const qb = this.db.getRepository(VmReadModelRow).createQueryBuilder('vm').select(['vm.id', 'vm.created_at', 'vm.state']).where('true');
    if (filter.projectId) qb.andWhere('vm.project_id = :projectId', { projectId: filter.projectId });
    if (filter.status) qb.andWhere('vm.status = :status', { status: filter.status });
    else qb.andWhere(`vm.status <> 'deleted'`);
    if (filter.zone) qb.andWhere('vm.zone = :zone', { zone: filter.zone });
    if (filter.name) qb.andWhere('vm.name = :name', { name: filter.name });
    filter.tags?.forEach((tag, i) => qb.andWhere(`vm.tags @> :tag${i}::jsonb`, { [`tag${i}`]: JSON.stringify({ [tag.key]: tag.value }) }));
    return keysetPage(qb, 'vm', limit, cursor, present);
  }
}
