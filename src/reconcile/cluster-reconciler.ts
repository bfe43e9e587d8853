import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { VmState } from '@hcp/domain';
import { VmReadModelRow } from '@hcp/projections';
import type { CallContext, ProviderDriver, VmDescription } from '@hcp/providers';
import { Loaded } from '../platform/event-sourcing/aggregate-repository';
import type { VmRepository } from '../vms';
import { ClusterScanned, ScannedResource } from './cluster-scanned';
import { VmReconciler } from './vm-reconciler';

/** VMs whose streams a pass reads with one loadMany (one statement on PostgreSQL). */
const LOAD_PAGE = 500;
/** VM streams read at once when a page that failed is read again VM by VM. */
const LOAD_CONCURRENCY = 8;

export interface ClusterPassOutcome {
  listed: number;
  reconciled: number;
  drift_events: number;
  tags_pushed: number;
}

/**
 * One reconcile pass over a cluster: HCP's live VMs of the cluster are read from their streams first,
 * then the provider is listed once, then each VM is decided against its listing. Reading the VMs before
 * the listing makes every decision safe against the race with jobs: a VM that changed after it was read
 * (a create that finished, a stop recorded) refuses the append, and the next pass decides again, so a
 * listing older than HCP's record never overrides it. VMs the listing shows that HCP's read model did
 * not list yet are only reported in the scan, never decided on.
 */
export class ClusterReconciler {
  private readonly logger = new Logger('reconcile');

  constructor(
    private readonly db: Pick<DataSource, 'getRepository'>,
    private readonly vms: Pick<VmRepository, 'load' | 'loadMany' | 'append'>,
    private readonly reconciler: VmReconciler,
    private readonly publish: (scan: ClusterScanned) => void,
  ) {}

  async reconcile(
    providerId: string,
    clusterId: string,
    driver: ProviderDriver,
    ctx: CallContext,
  ): Promise<ClusterPassOutcome | null> {
    if (!driver.listVms) return null;
    const traceId = ctx.trace_id ?? randomUUID();
    const known = await this.loadAll(await this.liveVmIds(providerId, clusterId));
    const scannedAt = new Date().toISOString();
    const listing = await driver.listVms(ctx);
    const byId = new Map<string, VmDescription>(listing.map((d) => [d.hcp_id, d]));

    const outcome: ClusterPassOutcome = { listed: listing.length, reconciled: 0, drift_events: 0, tags_pushed: 0 };
    const now = new Map<string, VmState | null>();
    for (const loaded of known) {
      const description = byId.get(loaded.id) ?? null;
      try {
        const { state, events } = await this.reconciler.record(loaded, description, traceId);
        outcome.reconciled++;
        outcome.drift_events += events.length;
        now.set(loaded.id, state);
        if (await this.reconciler.pushTags(state, description, driver, ctx)) outcome.tags_pushed++;
      } catch (err) {
        // One VM that cannot be recorded (or its tags written) does not hold back the others.
        this.logger.warn(`VM ${loaded.id}: not reconciled in this pass: ${(err as Error).message}`);
      }
    }
    const unknown = listing.filter((d) => !now.has(d.hcp_id)).map((d) => d.hcp_id);
    for (const loaded of await this.loadAll(unknown)) now.set(loaded.id, loaded.state);

    const resources: ScannedResource[] = listing.map((description) => ({
      description,
      vm: now.get(description.hcp_id) ?? null,
    }));
    this.publish(new ClusterScanned(providerId, clusterId, scannedAt, resources));
    return outcome;
  }

  /** HCP's VMs placed on this cluster that are not deleted, as its read model lists them. */
  private async liveVmIds(providerId: string, clusterId: string): Promise<string[]> {
    const rows = await this.db
      .getRepository(VmReadModelRow)
      .createQueryBuilder('v')
      .select('v.id', 'id')
      .where(`v.state->'placement'->>'provider_id' = :providerId`, { providerId })
      .andWhere(`v.state->'placement'->>'cluster_id' = :clusterId`, { clusterId })
      .andWhere(`v.status <> 'deleted'`)
      .getRawMany<{ id: string }>();
    return rows.map((r) => r.id);
  }

  /**
   * The VMs' streams, read a page at a time (one statement per page on PostgreSQL); an id whose stream
   * cannot be read is left out of the pass. A page that fails is read again VM by VM, so one stream that
   * cannot be decoded leaves out that VM only.
   */
  private async loadAll(ids: readonly string[]): Promise<Array<Loaded<VmState>>> {
    const out: Array<Loaded<VmState>> = [];
    for (let start = 0; start < ids.length; start += LOAD_PAGE) {
      const page = ids.slice(start, start + LOAD_PAGE);
      try {
        out.push(...(await this.vms.loadMany(page)));
      } catch {
        out.push(...(await this.loadOneByOne(page)));
      }
    }
    return out;
  }

  private async loadOneByOne(ids: readonly string[]): Promise<Array<Loaded<VmState>>> {
    const out: Array<Loaded<VmState>> = [];
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++];
        try {
          out.push(await this.vms.load(id));
        } catch (err) {
          this.logger.warn(`VM ${id}: its stream could not be read: ${(err as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, ids.length) }, worker));
    return out;
  }
}
