import { Inject, Module, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { EventBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { HcpConfig } from '../config/hcp-config';
import { JobExecutors, JobsModule } from '../jobs';
import { DriverRegistry, OpsCatalogQueries, OpsModule } from '../ops';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { HCP_CONFIG } from '../platform/tokens';
import { VmRepository, VmsModule } from '../vms';
import { ClusterReconciler } from './cluster-reconciler';
import { ReconcileController } from './reconcile.controller';
import { ReconcileLeases } from './reconcile-leases';
import { ReconcileLoop, reconcileLeaseMs } from './reconcile-loop';
import { ReconcileRequester } from './reconcile-request';
import { VmReconcileExecutor } from './vm-reconcile.executor';
import { VmReconciler } from './vm-reconciler';

/**
 * Provider truth: the periodic pass over every cluster (worker role, one leased process per cluster,
 * HCP_RECONCILE_INTERVAL_MS) and the on-demand reconcile of one VM (`POST /v1/ops/vms/{id}/reconcile`,
 * a `vm.reconcile` job). Each pass publishes ClusterScanned, which the orphans context reads.
 */
@Module({
  imports: [JobsModule, OpsModule, VmsModule],
  controllers: [ReconcileController],
  providers: [
    ReconcileRequester,
    VmReconcileExecutor,
    {
      provide: ReconcileLoop,
      useFactory: (
        config: HcpConfig,
        db: DataSource,
        vms: VmRepository,
        drivers: DriverRegistry,
        catalog: OpsCatalogQueries,
        metrics: HcpMetrics,
        events: EventBus,
      ) =>
        new ReconcileLoop(
          async () =>
            (await catalog.list('cluster')).map((c) => ({ provider_id: c.spec.provider_id, cluster_id: c.id })),
          (providerId, clusterId) => drivers.driverFor(providerId, clusterId),
          new ReconcileLeases(db),
          new ClusterReconciler(db, vms, new VmReconciler(vms, metrics), (scan) => events.publish(scan)),
          metrics,
          { leaseMs: reconcileLeaseMs(config.reconcileIntervalMs) },
        ),
      inject: [HCP_CONFIG, DataSource, VmRepository, DriverRegistry, OpsCatalogQueries, HcpMetrics, EventBus],
    },
  ],
})
export class ReconcileModule implements OnModuleInit, OnModuleDestroy {
  constructor(
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    private readonly executors: JobExecutors,
    private readonly executor: VmReconcileExecutor,
    private readonly loop: ReconcileLoop,
    private readonly tasks: PeriodicTasks,
  ) {}

  onModuleInit(): void {
    this.executors.register('vm.reconcile', this.executor);
    if (this.config.reconcileIntervalMs > 0)
      this.tasks.register({
        role: 'worker',
        name: 'reconcile',
        intervalMs: this.config.reconcileIntervalMs,
        run: () => this.loop.runOnce(),
      });
  }

  async onModuleDestroy(): Promise<void> {
    await this.loop.releaseAll();
  }
}
