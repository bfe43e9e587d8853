/**
 * What HCP reports of a VM: its power state, the addresses its guest agent knows, where it is
 * (provider_ref), and the tenant's tags it carries. After a start the guest agent gets a while to come up and report an address.
 */
import { HcpError } from '@hcp/domain';
import { pause } from '../common/pause';
import type { CallContext, VmAddress, VmDescription } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import type { ProxmoxSettings } from './proxmox-config';
import { agentEnabled, providerTagsOf } from './proxmox-format';
import { agentAddressesOf, powerOf } from './proxmox-translate';
import { ids, readVmStatus, type Located } from './proxmox-vm-lookup';

export async function describeLocated(
  cluster: ProxmoxCluster,
  hcpId: string,
  loc: Located,
  ctx: CallContext,
): Promise<VmDescription> {
  const st = await readVmStatus(cluster, loc, ctx);
  const power = powerOf(st);
  const addresses =
    power === 'running' && agentEnabled(loc.config.agent) ? await agentAddresses(cluster, loc, ctx) : [];
  const tags = providerTagsOf(loc.config);
  return {
    hcp_id: hcpId,
    power_state: power,
    addresses,
    provider_ref: { provider_id: cluster.providerId, cluster_id: cluster.clusterId, node: loc.node, vmid: loc.vmid },
    ...(tags ? { tags } : {}),
  };
}

/** After a start: gives the guest agent a while to report an address, never past the deadline. */
export async function describeWithAddresses(
  cluster: ProxmoxCluster,
  hcpId: string,
  loc: Located,
  settings: ProxmoxSettings,
  ctx: CallContext,
): Promise<VmDescription> {
  const { addressPollMs } = cluster.timing;
  let description = await describeLocated(cluster, hcpId, loc, ctx);
  if (!agentEnabled(loc.config.agent) || settings.address_wait_s === 0) return description;
  const until = Math.min(Date.now() + settings.address_wait_s * 1000, ctx.deadline.getTime() - addressPollMs - 1000);
  while (
    description.power_state === 'running' &&
    description.addresses.length === 0 &&
    Date.now() + addressPollMs < until
  ) {
    await pause(addressPollMs, ctx, 'waiting for the guest agent');
    description = await describeLocated(cluster, hcpId, loc, ctx);
  }
  return description;
}

/** Global addresses the guest agent reports; [] when it does not answer. */
export async function agentAddresses(cluster: ProxmoxCluster, loc: Located, ctx: CallContext): Promise<VmAddress[]> {
  let data: { result?: unknown } | null;
  try {
    data = await cluster.client.request<{ result?: unknown }>(
      'GET',
      '/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces',
      ids(loc),
      ctx,
      {
        idempotent: true,
        timeoutMs: cluster.timing.agentTimeoutMs,
      },
    );
  } catch (err) {
    // An agent that is not (yet) running is normal; a call that ran out of time is not.
    if (
      err instanceof HcpError &&
      err.code === 'PROVIDER_TIMEOUT' &&
      (ctx.signal.aborted || Date.now() >= ctx.deadline.getTime())
    )
      throw err;
    return [];
  }
  return agentAddressesOf(data?.result, loc.config);
}
