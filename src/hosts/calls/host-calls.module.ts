import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { LIBVIRT_CAPABILITIES } from '@hcp/providers';
import { HcpConfig } from '../../config/hcp-config';
import { PeriodicTasks } from '../../platform/background/periodic-tasks';
import { HCP_CONFIG } from '../../platform/tokens';
import { DriverPlugins, OpsModule } from '../../ops';
import { HostAgentDriver } from './host-agent.driver';
import { HostPlacements } from './host-placements';
import { HostAuthModule } from '../internal/host-auth.module';
import { HostCallQueue } from './host-call-queue';
import { HostCallsController } from './host-calls.controller';

/** Finished host calls are kept this long for diagnosis. */
const FINISHED_CALLS_KEPT_MS = 60 * 60_000;

/**
 * Driver calls for host agents: the queue of calls per host, the internal routes agents claim, renew and
 * report them on, and the HostAgentDriver that HCP's jobs and loops use for agent clusters (libvirt).
 */
@Module({
  imports: [HostAuthModule, OpsModule],
  controllers: [HostCallsController],
  providers: [HostCallQueue, HostPlacements],
  exports: [HostCallQueue, HostPlacements],
})
export class HostCallsModule implements OnModuleInit {
  constructor(
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    private readonly plugins: DriverPlugins,
    private readonly calls: HostCallQueue,
    private readonly placements: HostPlacements,
    private readonly tasks: PeriodicTasks,
  ) {}

  onModuleInit(): void {
    this.plugins.register(
      'libvirt',
      (target) =>
        new HostAgentDriver({
          type: 'libvirt',
          providerId: target.providerId,
          clusterId: target.clusterId,
          capabilities: LIBVIRT_CAPABILITIES,
          heartbeatTimeoutMs: this.config.hosts.heartbeatTimeoutMs,
          pollMs: this.config.hosts.callPollMs,
          calls: this.calls,
          placements: this.placements,
        }),
    );
    this.tasks.register({
      role: 'worker',
      name: 'host call pruning',
      intervalMs: 10 * 60_000,
      run: async () => {
        await this.calls.prune(FINISHED_CALLS_KEPT_MS);
      },
    });
  }
}
