/**
 * Finding the VM of an HCP id, and reading its config and status.
 *
 * Identity: a VM carries its HCP id three ways. The description holds `hcp-id: <id>` (authoritative),
 * the tags hold `hcp` and `hcp-id-<id>` (visible in `/cluster/resources`, so a lookup costs one list
 * and one config read), and between clone and configure the VM is named `hcp-<id>` (the clone call
 * cannot set tags, but it sets the name and description), so a create interrupted at any point is
 * found again instead of cloned twice.
 */
import { HcpError, notFound } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { isVmMissing } from './proxmox-errors';
import { cloneMarkerName, hcpIdOfDescription, hcpIdTag, parseTags } from './proxmox-format';
import { badAnswer, isTemplate, type ClusterResource, type VmConfig, type VmStatus } from './proxmox-translate';

// A type, not an interface: the client's path values are a Record, which only type literals satisfy.
export type VmRef = { node: string; vmid: number };

/** A VM found by its HCP id, with the config it was recognised by. */
export interface Located extends VmRef {
  config: VmConfig;
}

/** The path values of `/nodes/{node}/qemu/{vmid}/...`. */
export function ids(loc: VmRef): VmRef {
  return { node: loc.node, vmid: loc.vmid };
}

/** The VM with this HCP id, or null. */
export async function locateVm(cluster: ProxmoxCluster, hcpId: string, ctx: CallContext): Promise<Located | null> {
  const vms = await cluster.client.get<ClusterResource[]>('/cluster/resources', {}, ctx, { type: 'vm' });
  const tag = hcpIdTag(hcpId);
  const marker = cloneMarkerName(hcpId);
  const candidates = (vms ?? [])
    .filter((r) => r.type === 'qemu' && !isTemplate(r) && typeof r.vmid === 'number' && typeof r.node === 'string')
    .filter((r) => parseTags(r.tags).includes(tag) || r.name === marker)
    .sort((a, b) => (a.vmid ?? 0) - (b.vmid ?? 0));
  for (const candidate of candidates) {
    const loc = { node: candidate.node!, vmid: candidate.vmid! };
    let config: VmConfig;
    try {
      config = await readVmConfig(cluster, loc, ctx);
    } catch (err) {
      if (isVmMissing(err)) continue;
      throw err;
    }
    if (hcpIdOfDescription(config.description) === hcpId) return { ...loc, config };
  }
  return null;
}

export async function requireVm(cluster: ProxmoxCluster, hcpId: string, ctx: CallContext): Promise<Located> {
  const loc = await locateVm(cluster, hcpId, ctx);
  if (!loc) throw notFound(`VM ${hcpId}`);
  return loc;
}

export function refuseWhileCreating(hcpId: string, loc: Located): void {
  const lock = loc.config.lock;
  if (lock === 'clone' || lock === 'create' || loc.config.name === cloneMarkerName(hcpId)) {
    // The create that owns it will finish (or its retry will), so this is worth retrying.
    throw new HcpError('CONFLICT', `VM ${hcpId} is still being created`, { phase: 'creating' }, true);
  }
}

export function readVmConfig(cluster: ProxmoxCluster, loc: VmRef, ctx: CallContext): Promise<VmConfig> {
  return cluster.client.get<VmConfig>('/nodes/{node}/qemu/{vmid}/config', ids(loc), ctx).then((c) => c ?? {});
}

export async function readVmStatus(cluster: ProxmoxCluster, loc: VmRef, ctx: CallContext): Promise<VmStatus> {
  const st = await cluster.client.get<VmStatus>('/nodes/{node}/qemu/{vmid}/status/current', ids(loc), ctx);
  if (!st || typeof st.status !== 'string') throw badAnswer('status/current');
  return st;
}
