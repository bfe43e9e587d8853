import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { decideQuota, EventContext, QuotaLimits, QuotaResources } from '@hcp/domain';
import { QuotaReadModelRow } from '@hcp/projections';
import { presentQuota, QuotaView } from './quota.presenter';
import type { AlongsideWrites } from '../platform/event-sourcing/aggregate-repository';
import { QUOTA_CONTENTION, QuotaRepository } from './quota.repository';

/**
 * Project quotas. Writes decide on the quota aggregate (one stream per project) with optimistic
 * concurrency, so concurrent reservations can never overbook: each is decided against the state that
 * includes every reservation appended before it. Reads come from the `project_quotas` read model.
 */
@Injectable()
export class QuotaService {
  constructor(
    private readonly quotas: QuotaRepository,
    private readonly db: DataSource,
  ) {}

  /**
   * Holds `resources` and one instance for the VM against its project's quota, or throws
   * QUOTA_EXCEEDED (403) naming the resource. Reserving a VM that already holds a reservation (a
   * retried request) changes nothing.
   *
   * `alongside` are writes to commit with a new reservation (not with a held one: nothing is written
   * then); the answer says whether they were.
   */
  async reserve(
    projectId: string,
    vmId: string,
    resources: QuotaResources,
    ctx: EventContext,
    alongside?: () => AlongsideWrites,
  ): Promise<{ alongside: boolean }> {
    const decided = await this.quotas.updateContended(
      projectId,
      (state) => decideQuota(state, { type: 'reserve', project_id: projectId, vm_id: vmId, resources }),
      ctx,
      QUOTA_CONTENTION,
      alongside,
    );
    return { alongside: decided.alongside };
  }

  /** Gives the VM's reservation back; returns whether it held one (false: unknown or released already). */
  async release(projectId: string, vmId: string, ctx: EventContext): Promise<boolean> {
    const { events } = await this.quotas.updateContended(
      projectId,
      (state) => decideQuota(state, { type: 'release', project_id: projectId, vm_id: vmId }),
      ctx,
    );
    return events.length > 0;
  }

  /**
   * Sets the project's limits and answers the quota as it is right after (from the aggregate, so the
   * answer already shows the new limits while the read model catches up). Limits below current usage
   * are accepted; they refuse new reservations only.
   */
  async setLimits(projectId: string, limits: QuotaLimits, ctx: EventContext): Promise<QuotaView> {
    const { state } = await this.quotas.updateContended(
      projectId,
      (current) => decideQuota(current, { type: 'set_limits', project_id: projectId, limits }),
      ctx,
    );
    return presentQuota(projectId, state);
  }

  /** Limits and usage from the read model; a project without a quota stream is unlimited and unused. */
  async view(projectId: string): Promise<QuotaView> {
    const row = await this.db
      .getRepository(QuotaReadModelRow)
      .findOne({ where: { id: projectId }, select: { id: true, limits: true, usage: true } });
    return presentQuota(projectId, row);
  }
}
