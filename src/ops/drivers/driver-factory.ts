import { HcpError, ProviderType } from '@hcp/domain';
import {
  ProviderDriver,
  ProxmoxDriver,
  SimulatorDriver,
  SimulatorFaults,
  SimulatorState,
  simulatorLatency,
  VsphereDriver,
} from '@hcp/providers';
import { HcpConfig } from '../../config/hcp-config';
import type { DriverPlugins, DriverTarget } from './driver-plugins';

/**
 * Builds the driver for a provider and one of its clusters (the cluster's placement hints are driver
 * settings: Proxmox nodes, storage, bridge, ...). Types without a driver in this release are refused at
 * registration, so they can never be placed on.
 */
export class DriverFactory {
  constructor(
    private readonly config: HcpConfig,
    private readonly simulatorState: SimulatorState,
    private readonly plugins?: DriverPlugins,
  ) {}

  static readonly SUPPORTED: readonly ProviderType[] = ['simulator', 'proxmox', 'vsphere'];

  supports(type: ProviderType): boolean {
    return DriverFactory.SUPPORTED.includes(type) || this.plugins?.builderFor(type) !== undefined;
  }

  /** Checks a provider's settings and credentials as its driver reads them (no I/O); throws INVALID_REQUEST. */
  async validate(target: DriverTarget): Promise<void> {
    await this.create(target).close?.();
  }

  create(target: DriverTarget): ProviderDriver {
    const { provider } = target;
    switch (provider.type) {
      case 'simulator':
        return new SimulatorDriver({
          state: this.simulatorState,
          latency: simulatorLatency({
            scale: numberSetting(provider.settings.latency_scale) ?? this.config.simulator.latencyScale,
          }),
          faults: SimulatorFaults.parse(
            typeof provider.settings.faults === 'string' ? provider.settings.faults : this.config.simulator.faults,
          ),
          clusterId: target.clusterId,
          providerId: target.providerId,
        });
      case 'proxmox':
        return new ProxmoxDriver({
          endpoint: provider.endpoint ?? '',
          credentials: target.credentials ?? {},
          tls: provider.tls,
          // Provider settings first, then the cluster's placement hints (nodes, storage, pool, bridge).
          settings: [provider.settings, target.cluster?.placement_hints],
          provider_id: target.providerId,
          cluster_id: target.clusterId,
        });
      case 'vsphere':
        return new VsphereDriver({
          endpoint: provider.endpoint ?? '',
          credentials: target.credentials ?? {},
          tls: provider.tls,
          // Provider settings first, then the cluster's placement hints (datacenter, cluster or resource
          // pool, folder, datastore).
          settings: [provider.settings, target.cluster?.placement_hints],
          provider_id: target.providerId,
          cluster_id: target.clusterId,
        });
      default: {
        const build = this.plugins?.builderFor(provider.type);
        if (build) return build(target);
        throw new HcpError('FEATURE_NOT_SUPPORTED', `no driver for provider type ${provider.type} in this release`, {
          capability: `provider:${provider.type}`,
        });
      }
    }
  }
}

function numberSetting(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
