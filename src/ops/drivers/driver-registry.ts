import { Inject, Injectable } from '@nestjs/common';
import { Capabilities, HcpError, narrowCapabilities, OpsResourceState } from '@hcp/domain';
import { CallSlots, ProviderDriver, slottedDriver } from '@hcp/providers';
import { HcpConfig } from '../../config/hcp-config';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { HCP_CONFIG } from '../../platform/tokens';
import { OpsResourceRepository } from '../ops-resource.repository';
import { ProviderCredentialsStore } from './provider-credentials.store';
import { DriverFactory } from './driver-factory';

/**
 * The driver of each (provider, cluster), built from the ops catalog and the sealed credentials, and
 * cached until either resource changes (its `updated_at` is part of the key). Its changes at the
 * provider go through the cluster's call slots (HCP_PROVIDER_CALLS_PER_CLUSTER), which outlive a rebuilt
 * driver, so a spec changed during a burst never lets twice the bound through.
 */
@Injectable()
export class DriverRegistry {
  private readonly cache = new Map<string, { version: string; driver: ProviderDriver }>();
  private readonly slots = new Map<string, { type: string; slots: CallSlots }>();

  constructor(
    private readonly resources: OpsResourceRepository,
    private readonly credentials: ProviderCredentialsStore,
    private readonly factory: DriverFactory,
    @Inject(HCP_CONFIG) private readonly config: Pick<HcpConfig, 'providerCallsPerCluster'>,
    private readonly metrics: HcpMetrics,
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
    const driver = slottedDriver(
      this.factory.create({
        providerId,
        provider: provider.spec,
        credentials: provider.spec.has_credentials ? await this.credentials.get(providerId) : null,
        clusterId,
        cluster: cluster?.spec ?? null,
      }),
      this.slotsOf(key, provider.spec.type),
    );
    await cached?.driver.close?.();
    this.cache.set(key, { version, driver });
    return { driver, cluster };
  }

  private slotsOf(key: string, type: string): CallSlots {
    let entry = this.slots.get(key);
    if (!entry) {
      entry = { type, slots: new CallSlots(this.config.providerCallsPerCluster, () => this.gaugeSlots(type)) };
      this.slots.set(key, entry);
    }
    return entry.slots;
  }

  /** The gauge of one provider type: its clusters' lines together (metrics carry no resource ids). */
  private gaugeSlots(type: string): void {
    let running = 0;
    let waiting = 0;
    for (const entry of this.slots.values()) {
      if (entry.type !== type) continue;
      running += entry.slots.busy;
      waiting += entry.slots.queued;
    }
    this.metrics.providerCallSlots.set({ provider: type, state: 'running' }, running);
    this.metrics.providerCallSlots.set({ provider: type, state: 'waiting' }, waiting);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.cache.values()].map(({ driver }) => driver.close?.()));
    this.cache.clear();
  }
}
