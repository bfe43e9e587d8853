import { DynamicModule, Module, Type } from '@nestjs/common';
import { MODULE_METADATA } from '@nestjs/common/constants';
import { CqrsModule } from '@nestjs/cqrs';
import { LoggerModule } from 'nestjs-pino';
import { AuditModule } from './audit';
import { CatalogModule } from './catalog';
import { ConsoleModule } from './console';
import { HostsModule } from './hosts';
import { HttpModule } from './http/http.module';
import { loggerOptions } from './http/request/logger-options';
import { JobsModule } from './jobs';
import { MeteringModule } from './metering';
import { OpsModule } from './ops';
import { OrphansModule } from './orphans';
import { PlatformModule } from './platform/platform.module';
import { HcpRuntime } from './platform/runtime/hcp-runtime';
import { MetricsController } from './platform/observability/metrics.controller';
import { ProjectionsAdminModule } from './projections-admin';
import { QuotasModule } from './quotas';
import { ReconcileModule } from './reconcile';
import { VmsModule } from './vms';

/** The contexts, each a Nest module owning its routes, commands, queries and background work. */
export const CONTEXT_MODULES: readonly Type[] = [
  VmsModule,
  JobsModule,
  QuotasModule,
  CatalogModule,
  OpsModule,
  ConsoleModule,
  AuditModule,
  MeteringModule,
  ProjectionsAdminModule,
  OrphansModule,
  ReconcileModule,
  HostsModule,
];

/** Every controller the application serves (the route-policy test walks them). */
export function appControllers(): Type[] {
  const declared = (module: Type): Type[] => Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, module) ?? [];
  // A context's own modules (hosts imports its host-calls module) declare routes too.
  const withImports = (module: Type, seen = new Set<Type>()): Type[] => {
    if (seen.has(module)) return [];
    seen.add(module);
    const imports: unknown[] = Reflect.getMetadata(MODULE_METADATA.IMPORTS, module) ?? [];
    return [module, ...imports.filter((m): m is Type => typeof m === 'function').flatMap((m) => withImports(m, seen))];
  };
  const modules = new Set(CONTEXT_MODULES.flatMap((m) => withImports(m)));
  // The metrics controller is handed to PrometheusModule, which declares it.
  return [...new Set([...declared(PlatformModule), MetricsController, ...[...modules].flatMap(declared)])];
}

/** The application, assembled around a runtime opened beforehand (see main.ts). */
@Module({})
export class AppModule {
  static forRoot(runtime: HcpRuntime): DynamicModule {
    const { config } = runtime;
    return {
      module: AppModule,
      imports: [
        CqrsModule.forRoot(),
        LoggerModule.forRoot(loggerOptions(config.logLevel)),
        PlatformModule.forRoot(runtime),
        HttpModule.forRoot(appControllers()),
        ...CONTEXT_MODULES,
      ],
    };
  }
}
