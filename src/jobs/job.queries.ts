import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { notFound } from '@hcp/domain';
import { JobReadModelRow } from '@hcp/projections';
import { keysetPage, Page } from '../platform/persistence/keyset-page';
import { JobView, presentJob } from './job.presenter';

/** Reads jobs from the read model only. */
@Injectable()
export class JobQueries {
  constructor(private readonly db: DataSource) {}

  async get(projectId: string, jobId: string): Promise<JobView> {
    const row = await this.db
      .getRepository(JobReadModelRow)
      .findOne({ where: { id: jobId, project_id: projectId }, select: { id: true, state: true } });
    if (!row) throw notFound('job');
    return presentJob(row.state);
  }

  /** Jobs of a project, or (projectId null, for ops) of all projects. */
  list(
    projectId: string | null,
    filter: { resource_id?: string; status?: string },
    limit: number,
    cursor?: string,
  ): Promise<Page<JobView>> {
    const qb = this.db
      .getRepository(JobReadModelRow)
      .createQueryBuilder('job')
      .select(['job.id', 'job.created_at', 'job.state'])
      .where('true');
    if (projectId) qb.andWhere('job.project_id = :projectId', { projectId });
    if (filter.resource_id) qb.andWhere('job.resource_id = :resourceId', { resourceId: filter.resource_id });
    if (filter.status) qb.andWhere('job.status = :status', { status: filter.status });
    return keysetPage(qb, 'job', limit, cursor, (row) => presentJob(row.state));
  }
}
