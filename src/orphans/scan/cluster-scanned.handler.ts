import { Logger } from '@nestjs/common';
import { EventsHandler, IEventHandler } from '@nestjs/cqrs';
import { ClusterScanned } from '../../reconcile';
import { OrphanScan } from './orphan-scan';

/**
 * Reads orphans out of each cluster listing the reconcile loop publishes. A failure is logged and the
 * next listing of the cluster decides again: nothing here is lost by skipping one.
 */
@EventsHandler(ClusterScanned)
export class ClusterScannedHandler implements IEventHandler<ClusterScanned> {
  private readonly logger = new Logger('orphans');

  constructor(private readonly scan: OrphanScan) {}

  async handle(event: ClusterScanned): Promise<void> {
    try {
      const outcome = await this.scan.apply(event);
      if (outcome.found.length || outcome.cleared.length)
        this.logger.log(
          `cluster ${event.cluster_id}: ${outcome.found.length} orphans found, ${outcome.cleared.length} cleared, ${outcome.destroy_jobs.length} destroy jobs opened`,
        );
    } catch (err) {
      this.logger.warn(`orphans of cluster ${event.cluster_id} not updated from this scan: ${(err as Error).message}`);
    }
  }
}
