import { Injectable } from '@nestjs/common';
import { HcpError } from '@hcp/domain';
import { ProviderDriver } from '@hcp/providers';

/** The driver of each registered provider, by provider id. */
@Injectable()
export class DriverRegistry {
  private readonly drivers = new Map<string, ProviderDriver>();

  register(providerId: string, driver: ProviderDriver): void {
    this.drivers.set(providerId, driver);
  }

  get(providerId: string): ProviderDriver {
    const driver = this.drivers.get(providerId);
    // Not retryable: the provider was removed or never registered in this process's configuration.
    if (!driver) throw new HcpError('PROVIDER_UNAVAILABLE', 'the VM\'s provider is not available', undefined, false);
    return driver;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.drivers.values()].map((d) => d.close?.()));
  }
}
