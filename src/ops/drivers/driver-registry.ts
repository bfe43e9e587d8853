import { Injectable } from '@nestjs/common';
import { Capabilities, HcpError, narrowCapabilities, OpsResourceState } from '@hcp/domain';
import { ProviderDriver } from '@hcp/providers';
import { OpsResourceRepository } from '../ops-resource.repository';
import { ProviderCredentialsStore } from './provider-credentials.store';
import { DriverFactory } from './driver-factory';

/**
 * The driver of each (provider, cluster), built from the ops catalog and the sealed credentials, and
 * cached until either resource changes (its `updated_at` is part of the key).
 */
@Injectable()
export class DriverRegistry {
  private readonly cache = new Map<string, { version: string; driver: ProviderDriver }>();

  constructor(
    private readonly resources: OpsResourceRepository,
    private readonly credentials: ProviderCredentialsStore,
    private readonly factory: DriverFactory,
  ) {}

  /** Resources are read from their streams: a provider registered a moment ago is already usable. */
  async driverFor(providerId: string, clusterId: string): Promise<ProviderDriver> {
    return (await this.resolve(providerId, clusterId)).driver;
  }

  /** What a cluster offers: its driver's capabilities narrowed by the cluster's settings. */
  async clusterCapabilities(providerId: string, clusterId: string): Promise<Capabilities> {
    // The cluster as read for the driver: reading its stream a second time would cost a round trip.
    const { driver, cluster } = await this.resolve(providerId, clusterId);
    return narrowCapabilities(driver.capabilities(), cluster?.spec.capabilities ?? {});
  }

  private async resolve(
    providerId: string,
    clusterId: string,
  ): Promise<{ driver: ProviderDriver; cluster: OpsResourceState<'cluster'> | null }> {
    const [provider, cluster] = await Promise.all([
      this.resources.live('provider', providerId),
      this.resources.live('cluster', clusterId),
    ]);
    // Not retryable: the provider or cluster was deleted while the VM still lived on it.
    if (!provider)
      throw new HcpError('PROVIDER_UNAVAILABLE', "the VM's provider is not registered any more", undefined, false);
    const key = `${providerId}/${clusterId}`;
    const version = `${provider.updated_at}/${cluster?.updated_at ?? '-'}`;
    const cached = this.cache.get(key);
    if (cached?.version === version) return { driver: cached.driver, cluster };
    const driver = this.factory.create({
      providerId,
      provider: provider.spec,
      credentials: provider.spec.has_credentials ? await this.credentials.get(providerId) : null,
      clusterId,
      cluster: cluster?.spec ?? null,
    });
    await cached?.driver.close?.();
    this.cache.set(key, { version, driver });
    return { driver, cluster };
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.cache.values()].map(({ driver }) => driver.close?.()));
    this.cache.clear();
  }
}
