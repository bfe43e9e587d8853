/**
 * Every VM of the cluster that carries an HCP id, for the reconcile loop and the orphan list: one
 * `/cluster/resources?type=vm` listing, then each candidate's config (its description is what names
 * the HCP id, see proxmox-vm-lookup.ts) and, for a running VM with a guest agent, its addresses.
 */
import type { CallContext, PowerState, VmDescription } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { agentAddresses } from './proxmox-describe';
import { isVmMissing } from './proxmox-errors';
import { agentEnabled, hcpIdOfDescription, HCP_TAG, parseTags, providerTagsOf } from './proxmox-format';
import { isTemplate, type ClusterResource, type VmConfig } from './proxmox-translate';
import { readVmConfig } from './proxmox-vm-lookup';

/** Config and agent reads in flight at once: bounded so a big cluster does not flood the API. */
const CONCURRENCY = 8;

/**
 * The name of a clone whose create has not configured it yet (`hcp-<id>`). Only a UUID counts: HCP's
 * ids are UUIDs, and a VM someone named `hcp-web` by hand must never be taken for HCP's.
 */
const CLONE_MARKER = /^hcp-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export async function listHcpVms(cluster: ProxmoxCluster, ctx: CallContext): Promise<VmDescription[]> {
  const resources = (await cluster.client.get<ClusterResource[]>('/cluster/resources', {}, ctx, { type: 'vm' })) ?? [];
  const candidates = resources.filter(
    (r) =>
      r.type === 'qemu' &&
      !isTemplate(r) &&
      typeof r.vmid === 'number' &&
      typeof r.node === 'string' &&
      (carriesHcpTag(r) || CLONE_MARKER.test(r.name ?? '')),
  );
  const out: VmDescription[] = [];
  let next = 0;
  const worker = async () => {
    while (next < candidates.length) {
      const described = await describeResource(cluster, candidates[next++], ctx);
      if (described) out.push(described);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, candidates.length) }, worker));
  return out.sort((a, b) => Number(a.provider_ref.vmid) - Number(b.provider_ref.vmid));
}

function carriesHcpTag(r: ClusterResource): boolean {
  return parseTags(r.tags).some((t) => t === HCP_TAG || t.startsWith('hcp-id-'));
}

async function describeResource(
  cluster: ProxmoxCluster,
  r: ClusterResource,
  ctx: CallContext,
): Promise<VmDescription | null> {
  const loc = { node: r.node!, vmid: r.vmid! };
  let config: VmConfig;
  try {
    config = await readVmConfig(cluster, loc, ctx);
  } catch (err) {
    // Deleted between the listing and the config read.
    if (isVmMissing(err)) return null;
    throw err;
  }
  const hcpId = hcpIdOfDescription(config.description) ?? CLONE_MARKER.exec(String(config.name ?? r.name ?? ''))?.[1];
  if (hcpId === undefined) return null;
  const creating = config.lock === 'clone' || config.lock === 'create';
  const power = creating ? 'unknown' : powerOfResource(r);
  const addresses =
    power === 'running' && agentEnabled(config.agent) ? await agentAddresses(cluster, { ...loc, config }, ctx) : [];
  const tags = providerTagsOf(config);
  return {
    hcp_id: hcpId,
    power_state: power,
    addresses,
    provider_ref: { provider_id: cluster.providerId, cluster_id: cluster.clusterId, node: loc.node, vmid: loc.vmid },
    ...(tags ? { tags } : {}),
  };
}

/** The listing's status; a paused VM also shows as running here (only status/current tells them apart). */
function powerOfResource(r: ClusterResource): PowerState {
  if (r.status === 'running') return 'running';
  if (r.status === 'stopped') return 'stopped';
  return 'unknown';
}
