import type { CallContext, ProviderDriver } from '@hcp/providers';
import type { ConsoleEndpoint, HostCapacity } from '@hcp/host-protocol';

/**
 * What the agent needs from its local driver: the SPI HCP's jobs call through host calls, plus the two
 * things only a driver on the host can answer (where its VNC server listens, and the host's capacity).
 * LibvirtDriver is one; tests use a double.
 */
export type HostDriver = ProviderDriver & {
  consoleEndpoint(hcpId: string, ctx: CallContext): Promise<ConsoleEndpoint>;
  hostCapacity(ctx: CallContext): Promise<HostCapacity>;
};
