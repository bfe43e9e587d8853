import { DynamicModule, Global, Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { DataSource } from 'typeorm';
import { TokenVerifier } from '@hcp/auth';
import { DomainEventCodec } from '@hcp/eventstore';
import { PeriodicTasks } from './background/periodic-tasks';
import { HealthController } from './health/health.controller';
import { HcpMetrics } from './observability/hcp-metrics';
import { MetricsController } from './observability/metrics.controller';
import { HcpRuntime } from './runtime/hcp-runtime';
import { EVENT_STORE, HCP_CONFIG, HCP_RUNTIME } from './tokens';

/**
 * What every context runs on: the resources opened before Nest starts (database, event store, codec,
 * token keys), the metrics, the process's timers, and the health and metrics routes. Global, because
 * every context needs it and none owns it.
 */
@Global()
@Module({ controllers: [HealthController] })
export class PlatformModule {
  static forRoot(runtime: HcpRuntime): DynamicModule {
    return {
      module: PlatformModule,
      imports: [PrometheusModule.register({ controller: MetricsController, defaultMetrics: { enabled: true } })],
      providers: [
        { provide: HCP_RUNTIME, useValue: runtime },
        { provide: HCP_CONFIG, useValue: runtime.config },
        { provide: DataSource, useValue: runtime.dataSource },
        { provide: EVENT_STORE, useValue: runtime.eventStore },
        { provide: DomainEventCodec, useValue: runtime.codec },
        { provide: TokenVerifier, useValue: runtime.tokenVerifier },
        HcpMetrics,
        PeriodicTasks,
      ],
      exports: [
        HCP_RUNTIME,
        HCP_CONFIG,
        DataSource,
        EVENT_STORE,
        DomainEventCodec,
        TokenVerifier,
        HcpMetrics,
        PeriodicTasks,
      ],
    };
  }
}
