import { Inject, Module, OnModuleInit } from '@nestjs/common';
import { SimulatorState } from '@hcp/providers';
import { HcpConfig } from '../config/hcp-config';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { HcpRuntime } from '../platform/runtime/hcp-runtime';
import { HCP_CONFIG, HCP_RUNTIME } from '../platform/tokens';
import { ClustersController } from './api/clusters.controller';
import { OpsFlavorsController } from './api/flavors.controller';
import { OpsImagesController } from './api/images.controller';
import { ProvidersController } from './api/providers.controller';
import { ZonesController } from './api/zones.controller';
import { DriverFactory } from './drivers/driver-factory';
import { DriverPlugins } from './drivers/driver-plugins';
import { DriverRegistry } from './drivers/driver-registry';
import { ProviderCredentialsStore, SECRET_BOX } from './drivers/provider-credentials.store';
import { ProviderHealthService } from './drivers/provider-health';
import { OpsCatalogCommands } from './ops-catalog.commands';
import { OpsCatalogQueries } from './ops-catalog.queries';
import { OpsResourceRepository } from './ops-resource.repository';

/**
 * The ops plane: providers (with their sealed credentials and health), clusters, zones, images and
 * flavors, and the drivers that reach each provider. Other contexts use the catalog's queries and the
 * driver registry.
 */
@Module({
  controllers: [ProvidersController, ClustersController, ZonesController, OpsImagesController, OpsFlavorsController],
  providers: [
    { provide: SECRET_BOX, useFactory: (runtime: HcpRuntime) => runtime.secretBox, inject: [HCP_RUNTIME] },
    // One simulator state per process: the simulator's VMs live in the database, shared by every driver.
    {
      provide: DriverFactory,
      useFactory: (config: HcpConfig, runtime: HcpRuntime, plugins: DriverPlugins) =>
        new DriverFactory(config, new SimulatorState(runtime.pool), plugins),
      inject: [HCP_CONFIG, HCP_RUNTIME, DriverPlugins],
    },
    DriverPlugins,
    DriverRegistry,
    ProviderCredentialsStore,
    ProviderHealthService,
    OpsResourceRepository,
    OpsCatalogCommands,
    OpsCatalogQueries,
  ],
  exports: [DriverRegistry, DriverPlugins, OpsCatalogCommands, OpsCatalogQueries],
})
export class OpsModule implements OnModuleInit {
  constructor(
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    private readonly health: ProviderHealthService,
    private readonly tasks: PeriodicTasks,
  ) {}

  onModuleInit(): void {
    this.tasks.register({
      role: 'worker',
      name: 'provider health checks',
      intervalMs: this.config.providerHealthIntervalMs,
      run: () => this.health.checkAll(),
    });
  }
}
