import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { ProviderDriver } from '@hcp/providers';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { ClusterReconciler } from './cluster-reconciler';
import { clusterKey, ReconcileLeases } from './reconcile-leases';

export interface ReconciledCluster {
  provider_id: string;
  cluster_id: string;
}

export interface ReconcileLoopOptions {
  /** How long a lease lasts without renewal, and the longest one pass over a cluster may take. */
  leaseMs: number;
  /** This process, as the holder of its leases. */
  holder?: string;
}

/** How long a shutdown waits for its leases to be given back. */
const RELEASE_WAIT_MS = 2000;

/** The lease of a cluster outlives two missed passes, and never less than this. */
export const MIN_RECONCILE_LEASE_MS = 15_000;

export function reconcileLeaseMs(intervalMs: number): number {
  return Math.max(MIN_RECONCILE_LEASE_MS, 2 * intervalMs);
}

/**
 * The periodic reconcile of every cluster, level-driven like a Kubernetes controller: each run compares
 * what the provider reports with HCP's records and records the difference, whatever happened before, so
 * a missed or failed run costs only time. One process per cluster: a run reconciles the clusters whose
 * lease it holds or can take. A cluster whose pass fails (provider down, database error) is logged and
 * counted, and the other clusters and the next run go on.
 */
export class ReconcileLoop {
  private readonly logger = new Logger('reconcile');
  readonly holder: string;
  private readonly held = new Set<string>();

  constructor(
    private readonly clusters: () => Promise<ReconciledCluster[]>,
    private readonly driverFor: (providerId: string, clusterId: string) => Promise<ProviderDriver>,
    private readonly leases: ReconcileLeases,
    private readonly reconciler: ClusterReconciler,
    private readonly metrics: Pick<HcpMetrics, 'reconcileDuration' | 'reconcileFailures'>,
    private readonly options: ReconcileLoopOptions,
  ) {
    this.holder = options.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  /** One run over every cluster; resolves with the clusters this process reconciled. */
  async runOnce(): Promise<ReconciledCluster[]> {
    const done: ReconciledCluster[] = [];
    let clusters: ReconciledCluster[];
    try {
      clusters = await this.clusters();
    } catch (err) {
      this.metrics.reconcileFailures.inc();
      this.logger.warn(`reconcile run skipped: the clusters could not be read: ${(err as Error).message}`);
      return done;
    }
    for (const cluster of clusters) {
      if (await this.reconcileCluster(cluster)) done.push(cluster);
    }
    return done;
  }

  /**
   * Gives back every lease this process holds (on shutdown), so another process takes over at once. A
   * database that does not answer is not waited for past RELEASE_WAIT_MS: the leases then expire instead.
   */
  async releaseAll(): Promise<void> {
    const keys = [...this.held];
    this.held.clear();
    if (keys.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RELEASE_WAIT_MS);
      timer.unref();
    });
    const released = Promise.all(keys.map((key) => this.leases.release(key, this.holder).catch(() => undefined)));
    await Promise.race([released, late]);
    clearTimeout(timer);
  }

  private async reconcileCluster(cluster: ReconciledCluster): Promise<boolean> {
    const key = clusterKey(cluster.provider_id, cluster.cluster_id);
    let provider = 'unknown';
    try {
      if (!(await this.leases.acquire(key, this.holder, this.options.leaseMs))) {
        this.held.delete(key);
        return false;
      }
      this.held.add(key);
      const driver = await this.driverFor(cluster.provider_id, cluster.cluster_id);
      provider = driver.type;
      const timer = this.metrics.reconcileDuration.startTimer({ provider });
      const outcome = await this.reconciler.reconcile(cluster.provider_id, cluster.cluster_id, driver, {
        // The pass ends before its lease could lapse, so no other process starts on the cluster meanwhile.
        deadline: new Date(Date.now() + this.options.leaseMs),
        signal: new AbortController().signal,
        trace_id: randomUUID(),
      });
      if (!outcome) return false;
      timer();
      if (outcome.drift_events || outcome.tags_pushed)
        this.logger.log(
          `cluster ${cluster.cluster_id}: ${outcome.listed} VMs listed, ${outcome.drift_events} drift events recorded, ${outcome.tags_pushed} tag sets written`,
        );
      return true;
    } catch (err) {
      this.metrics.reconcileFailures.inc();
      this.logger.warn(`reconcile of cluster ${cluster.cluster_id} (${provider}) failed: ${(err as Error).message}`);
      return false;
    }
  }
}
