// The ops context as other contexts see it.
export { OpsModule } from './ops.module';
export { DriverRegistry } from './drivers/driver-registry';
export { DriverPlugins, type DriverBuilder, type DriverTarget } from './drivers/driver-plugins';
export { OpsCatalogCommands } from './ops-catalog.commands';
export { OpsCatalogQueries, type OpsResource } from './ops-catalog.queries';
export { ProviderCredentialsStore } from './drivers/provider-credentials.store';
