import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { decideOrphan, HcpError, ORPHAN_UNRESOLVED, OrphanCommand, OrphanFacts, orphanRecordOf } from '@hcp/domain';
import { HcpConfig } from '../../config/hcp-config';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { HCP_CONFIG } from '../../platform/tokens';
import { ClusterScanned, ScannedResource } from '../../reconcile';
import { OrphanDestroyer } from '../commands/orphan-destroyer';
import { orphanIdOf, OrphanRepository } from '../orphan.repository';

/** The actor of what HCP records about orphans by itself: scans, and destroys under the destroy policy. */
export const ORPHAN_SCANNER_ACTOR = 'hcp-orphans';

export interface ScanOutcome {
  found: string[];
  cleared: string[];
  destroy_jobs: string[];
}

/**
 * What one cluster listing means for orphans: each listed resource whose HCP id has no live VM is an
 * orphan (found, or seen again), and each unresolved orphan of the cluster that is no longer listed, or
 * whose VM is live again, is cleared. Decisions are taken on each orphan's stream; the read model only
 * says which orphans of the cluster were unresolved, so one that a lagging read model misses is cleared
 * by a later scan.
 */
@Injectable()
export class OrphanScan {
  private readonly logger = new Logger('orphans');

  constructor(
    private readonly orphans: OrphanRepository,
    private readonly destroyer: OrphanDestroyer,
    private readonly db: DataSource,
    @Inject(HCP_CONFIG) private readonly config: Pick<HcpConfig, 'orphanPolicy'>,
  ) {}

  async apply(scan: ClusterScanned): Promise<ScanOutcome> {
    const context = eventContext(ORPHAN_SCANNER_ACTOR, `orphan-scan-${randomUUID()}`);
    const outcome: ScanOutcome = { found: [], cleared: [], destroy_jobs: [] };
    const unresolved = await this.unresolvedOf(scan.cluster_id);
    const listed = new Set<string>();
    /** Orphans an earlier scan found already and that the provider shows settled now: the policy's due. */
    const seenAgain: string[] = [];
    for (const resource of scan.resources) {
      const orphanId = orphanIdOf(scan.cluster_id, resource.description.hcp_id);
      listed.add(orphanId);
      const record = orphanRecordOf(resource.vm);
      const command: OrphanCommand | null = record
        ? { type: 'observe', orphan_id: orphanId, facts: factsOf(scan, resource, record), scanned_at: scan.scanned_at }
        : unresolved.has(orphanId)
          ? { type: 'clear', reason: 'vm_live', scanned_at: scan.scanned_at }
          : null;
      if (!command) continue;
      const { events } = await this.orphans.update(orphanId, (s) => decideOrphan(s, command), context);
      if (events.some((e) => e.type === 'OrphanFound')) outcome.found.push(orphanId);
      else if (record && resource.description.power_state !== 'unknown') seenAgain.push(orphanId);
      if (events.some((e) => e.type === 'OrphanCleared')) outcome.cleared.push(orphanId);
    }
    for (const orphanId of unresolved) {
      if (listed.has(orphanId)) continue;
      const { events } = await this.orphans.update(
        orphanId,
        (s) => decideOrphan(s, { type: 'clear', reason: 'not_listed', scanned_at: scan.scanned_at }),
        context,
      );
      if (events.length > 0) outcome.cleared.push(orphanId);
    }
    // The policy waits for a second sighting of a settled resource: a VM someone is still building (a
    // restore, another tool's create, a clone in its lock window) is listed before it is finished, and
    // one interval is what its owner gets to record it before HCP calls it an orphan and removes it.
    if (this.config.orphanPolicy === 'destroy')
      for (const orphanId of seenAgain) {
        const job = await this.destroyByPolicy(orphanId, context.trace_id);
        if (job) outcome.destroy_jobs.push(job);
      }
    return outcome;
  }

  /** Under the destroy policy an orphan seen again is destroyed, audited as the orphan scanner. */
  private async destroyByPolicy(orphanId: string, traceId: string): Promise<string | null> {
    try {
      const accepted = await this.destroyer.request(orphanId, { actor: ORPHAN_SCANNER_ACTOR, traceId }, 'policy');
      return accepted.job_id;
    } catch (err) {
      // Ops got there first (a destroy or an adoption in between): theirs stands.
      if (err instanceof HcpError && err.code === 'CONFLICT') return null;
      throw err;
    }
  }

  private async unresolvedOf(clusterId: string): Promise<Set<string>> {
    const rows: Array<{ id: string }> = await this.db.query(
      `SELECT id FROM orphan_read_model WHERE cluster_id = $1 AND status = ANY($2)`,
      [clusterId, ORPHAN_UNRESOLVED],
    );
    const ids = new Set(rows.map((r) => r.id));
    this.logger.debug(`cluster ${clusterId}: ${ids.size} unresolved orphans before the scan`);
    return ids;
  }
}

function factsOf(scan: ClusterScanned, resource: ScannedResource, record: OrphanFacts['hcp_record']): OrphanFacts {
  const { hcp_id, power_state, provider_ref } = resource.description;
  return {
    provider_id: scan.provider_id,
    cluster_id: scan.cluster_id,
    hcp_id,
    project_id: resource.vm?.project_id ?? null,
    provider_ref: { ...provider_ref },
    power_state,
    hcp_record: record,
  };
}
