import { Module, OnModuleInit } from '@nestjs/common';
import { JobExecutors, JobQueue, JobRepository, JobsModule } from '../jobs';
import { OpsModule } from '../ops';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { ProjectionHost, ProjectionsAdminModule } from '../projections-admin';
import { VmsModule } from '../vms';
import { OrphanAdopter } from './commands/orphan-adopter';
import { OrphanDestroyer } from './commands/orphan-destroyer';
import { OrphanDestroyExecutor } from './jobs/orphan-destroy.executor';
import { OrphanJobDispatcherProjection } from './jobs/orphan-job-dispatcher.projection';
import { OpsOrphansController } from './ops-orphans.controller';
import { OrphanQueries } from './orphan.queries';
import { OrphanRepository } from './orphan.repository';
import { ClusterScannedHandler } from './scan/cluster-scanned.handler';
import { OrphanScan } from './scan/orphan-scan';

const GAUGE_REFRESH_MS = 15_000;

/**
 * Orphans: provider resources that carry an HCP id but have no live VM, read from the reconcile loop's
 * cluster listings (ClusterScanned), listed for ops with adopt and destroy, and destroyed by `orphan.destroy`
 * jobs (by ops, or at once under HCP_ORPHAN_POLICY=destroy).
 */
@Module({
  imports: [JobsModule, OpsModule, VmsModule, ProjectionsAdminModule],
  controllers: [OpsOrphansController],
  providers: [
    OrphanRepository,
    OrphanQueries,
    OrphanScan,
    ClusterScannedHandler,
    OrphanDestroyer,
    OrphanAdopter,
    OrphanDestroyExecutor,
  ],
})
export class OrphansModule implements OnModuleInit {
  constructor(
    private readonly executor: OrphanDestroyExecutor,
    private readonly executors: JobExecutors,
    private readonly projections: ProjectionHost,
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly queries: OrphanQueries,
    private readonly metrics: HcpMetrics,
    private readonly tasks: PeriodicTasks,
  ) {}

  onModuleInit(): void {
    this.executors.register('orphan.destroy', this.executor);
    this.projections.registerProcessManager(new OrphanJobDispatcherProjection(this.jobs, this.queue));
    // API processes show the gauge beside the list it counts (both read the read model).
    this.tasks.register({
      role: 'api',
      name: 'orphan gauge',
      intervalMs: GAUGE_REFRESH_MS,
      run: () => this.refreshGauge(),
    });
  }

  private async refreshGauge(): Promise<void> {
    const counts = await this.queries.unresolvedByProvider();
    this.metrics.orphansOpen.reset();
    for (const { provider_id, count } of counts) this.metrics.orphansOpen.set({ provider: provider_id }, count);
  }
}
