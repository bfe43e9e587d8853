import { Inject, Module, OnModuleInit } from '@nestjs/common';
import type { HcpConfig } from '../config/hcp-config';
import { OpsModule } from '../ops';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { HCP_CONFIG } from '../platform/tokens';
import { HostCallsModule } from './calls/host-calls.module';
import { EnrollmentService } from './enrollment/enrollment.service';
import { HostDirectory } from './host-directory';
import { HostEventsRecorder } from './host-events.recorder';
import { HostStore } from './host.store';
import { HostAuthModule } from './internal/host-auth.module';
import { InternalHostsController } from './internal/internal-hosts.controller';
import { HostAdmin } from './ops/host-admin.service';
import { HostEnrollmentsController, HostsController } from './ops/hosts.controller';

const HOSTS_GAUGE_MS = 15_000;

/**
 * Host agents: their enrollment with bootstrap tokens, their credentials (digests only), the internal
 * router's guard and heartbeats, the ops routes on hosts, and (HostCallsModule) the driver calls agents
 * run for HCP.
 */
@Module({
  imports: [HostAuthModule, OpsModule, HostCallsModule],
  controllers: [InternalHostsController, HostEnrollmentsController, HostsController],
  providers: [EnrollmentService, HostEventsRecorder, HostAdmin, HostDirectory],
  exports: [HostDirectory, HostAuthModule],
})
export class HostsModule implements OnModuleInit {
  constructor(
    private readonly tasks: PeriodicTasks,
    private readonly hosts: HostStore,
    private readonly metrics: HcpMetrics,
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
  ) {}

  onModuleInit(): void {
    this.tasks.register({
      role: 'api',
      name: 'counting hosts',
      intervalMs: HOSTS_GAUGE_MS,
      run: async () => {
        const census = await this.hosts.census(this.config.hosts.heartbeatTimeoutMs);
        this.metrics.hosts.reset();
        for (const { state, online, count } of census) this.metrics.hosts.set({ state, online: String(online) }, count);
      },
    });
  }
}
