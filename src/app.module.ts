import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { PassportModule } from '@nestjs/passport';
import { ThrottlerModule } from '@nestjs/throttler';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { LoggerModule } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { BearerTokenStrategy, TokenVerifier } from '@hcp/auth';
import { DomainEventCodec } from '@hcp/eventstore';
import { CONTROLLERS } from './app-controllers';
import { AccessGuard } from './http/auth/access.guard';
import { HcpExceptionFilter } from './http/errors/hcp-exception.filter';
import { IdempotencyInterceptor } from './http/idempotency/idempotency.interceptor';
import { RequestAuditInterceptor } from './http/request/request-audit.interceptor';
import { RequestRecorder } from './http/request/request-recorder';
import { AuditQueries } from './audit/audit.queries';
import { MeteringQueries } from './metering/metering.queries';
import { ProjectionsService } from './projections-admin/projections.service';
import { rateLimits, RateLimitGuard } from './http/rate-limit/rate-limit.guard';
import { IdempotencyStore } from './http/idempotency/idempotency-store';
import { CatalogService } from './catalog/catalog.service';
import { EVENT_STORE, HCP_CONFIG, HCP_RUNTIME } from './platform/tokens';
import { JobAdmission } from './jobs/queue/job-admission';
import { JobQueue } from './jobs/queue/job-queue';
import { JobQueries } from './jobs/job.queries';
import { JobRepository } from './jobs/job.repository';
import { VmJobExecutor } from './vms/jobs/vm-job.executor';
import { loggerOptions } from './http/request/logger-options';
import { DriverFactory } from './ops/drivers/driver-factory';
import { DriverRegistry } from './ops/drivers/driver-registry';
import { OpsCatalogCommands } from './ops/ops-catalog.commands';
import { OpsCatalogQueries } from './ops/ops-catalog.queries';
import { OpsResourceRepository } from './ops/ops-resource.repository';
import { ProviderCredentialsStore, SECRET_BOX } from './ops/drivers/provider-credentials.store';
import { ProviderHealthService } from './ops/drivers/provider-health';
import { BackgroundProcesses } from './projections-admin/projection-host';
import { HcpMetrics } from './platform/observability/hcp-metrics';
import { MetricsController } from './platform/observability/metrics.controller';
import { BreakGlassRecorder } from './http/auth/break-glass.recorder';
import { HcpRuntime } from './platform/runtime/hcp-runtime';
import { CreateVmHandler } from './vms/commands/create-vm.handler';
import { DeleteVmHandler } from './vms/commands/delete-vm.handler';
import { RebootVmHandler } from './vms/commands/reboot-vm.handler';
import { StartVmHandler } from './vms/commands/start-vm.handler';
import { StopVmHandler } from './vms/commands/stop-vm.handler';
import { UpdateVmLabelsHandler } from './vms/commands/update-vm-labels.handler';
import { VmOperationRequester } from './vms/commands/vm-operation-requester';
import { VmQueries } from './vms/vm.queries';
import { QuotaRepository } from './quotas/quota.repository';
import { QuotaService } from './quotas/quota.service';
import { QuotaSweeper } from './vms/quota-sweeper';
import { VmRepository } from './vms/vm.repository';
import { ConsoleConnector } from './console/console-connector';
import { ConsoleGateway } from './console/console-gateway';
import { ConsoleSessionRepository } from './console/console-session.repository';
import { OpenConsoleSessionHandler } from './console/open-console-session.handler';

const COMMAND_HANDLERS = [CreateVmHandler, StartVmHandler, StopVmHandler, RebootVmHandler, DeleteVmHandler, UpdateVmLabelsHandler, OpenConsoleSessionHandler];

/** The application, assembled around a runtime opened beforehand (see main.ts). */
@Module({})
export class AppModule {
  static forRoot(runtime: HcpRuntime): DynamicModule {
    const { config } = runtime;
    return {
      module: AppModule,
      imports: [
        CqrsModule.forRoot(),
        PassportModule,
        LoggerModule.forRoot(loggerOptions(config.logLevel)),
        PrometheusModule.register({ controller: MetricsController, defaultMetrics: { enabled: true } }),
        ThrottlerModule.forRoot(rateLimits(config.rateLimit.perActorPerMinute, config.rateLimit.perProjectPerMinute)),
      ],
      controllers: CONTROLLERS,
      providers: [
        { provide: HCP_RUNTIME, useValue: runtime },
        { provide: HCP_CONFIG, useValue: config },
        { provide: DataSource, useValue: runtime.dataSource },
        { provide: EVENT_STORE, useValue: runtime.eventStore },
        { provide: DomainEventCodec, useValue: runtime.codec },
        { provide: DriverFactory, useValue: runtime.driverFactory },
        { provide: SECRET_BOX, useValue: runtime.secretBox },
        DriverRegistry,
        OpsCatalogQueries,
        OpsCatalogCommands,
        OpsResourceRepository,
        ProviderCredentialsStore,
        ProviderHealthService,
        { provide: TokenVerifier, useValue: runtime.tokenVerifier },
        BearerTokenStrategy,
        BreakGlassRecorder,
        // Guards run in this order: who is calling and may they, then how often.
        { provide: APP_GUARD, useClass: AccessGuard },
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_FILTER, useClass: HcpExceptionFilter },
        // Interceptors run in this order: the request is recorded for the audit trail, then deduplicated.
        { provide: APP_INTERCEPTOR, useClass: RequestAuditInterceptor },
        { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
        RequestRecorder,
        AuditQueries,
        MeteringQueries,
        ProjectionsService,
        IdempotencyStore,
        CatalogService,
        VmRepository,
        JobRepository,
        VmOperationRequester,
        ...COMMAND_HANDLERS,
        VmQueries,
        JobQueries,
        JobQueue,
        JobAdmission,
        VmJobExecutor,
        QuotaRepository,
        QuotaService,
        QuotaSweeper,
        HcpMetrics,
        BackgroundProcesses,
        ConsoleSessionRepository,
        ConsoleConnector,
        ConsoleGateway,
      ],
    };
  }
}
