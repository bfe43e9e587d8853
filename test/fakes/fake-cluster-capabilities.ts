import { Capabilities, NO_CAPABILITIES } from '@hcp/domain';
import { DriverRegistry } from '../../src/ops';

/**
 * DriverRegistry.clusterCapabilities without drivers or ops streams: what each (provider, cluster)
 * offers as set with `offer` (NO_CAPABILITIES for any other), recording every question. `failWith`
 * makes every question throw (the VM's provider was deregistered).
 */
export class FakeClusterCapabilities implements Pick<DriverRegistry, 'clusterCapabilities'> {
  readonly asked: Array<{ provider_id: string; cluster_id: string }> = [];
  private readonly offered = new Map<string, Capabilities>();
  private failure: unknown = null;

  /** The cluster offers these capabilities (the rest as NO_CAPABILITIES). */
  offer(providerId: string, clusterId: string, capabilities: Partial<Capabilities>): this {
    this.offered.set(`${providerId}/${clusterId}`, { ...NO_CAPABILITIES, ...capabilities });
    return this;
  }

  failWith(error: unknown): this {
    this.failure = error;
    return this;
  }

  async clusterCapabilities(providerId: string, clusterId: string): Promise<Capabilities> {
    this.asked.push({ provider_id: providerId, cluster_id: clusterId });
    if (this.failure) throw this.failure;
    return this.offered.get(`${providerId}/${clusterId}`) ?? NO_CAPABILITIES;
  }
}
