import { Injectable } from '@nestjs/common';
import type { ClusterSpec, ProviderSpec, ProviderType } from '@hcp/domain';
import type { ProviderDriver } from '@hcp/providers';

export interface DriverTarget {
  providerId: string;
  provider: ProviderSpec;
  credentials: Record<string, unknown> | null;
  clusterId: string;
  cluster: ClusterSpec | null;
}

/** Builds the driver of a (provider, cluster) for a provider type another context serves. */
export type DriverBuilder = (target: DriverTarget) => ProviderDriver;

/**
 * Provider types whose driver lives in another context: the hosts context serves agent clusters
 * (libvirt), whose driver queues calls for host agents instead of calling a hypervisor itself. The ops
 * plane knows only that such a type has a driver; contexts register theirs when their module starts.
 */
@Injectable()
export class DriverPlugins {
  private readonly builders = new Map<ProviderType, DriverBuilder>();

  register(type: ProviderType, build: DriverBuilder): void {
    this.builders.set(type, build);
  }

  builderFor(type: ProviderType): DriverBuilder | undefined {
    return this.builders.get(type);
  }
}
