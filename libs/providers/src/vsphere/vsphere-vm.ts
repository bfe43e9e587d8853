/**
 * Finding HCP's VMs and describing them. A VM is HCP's by the `hcp.id` key of its extraConfig,
 * written by the clone itself (never by a later step), so a VM without it was not made by HCP.
 */
import { notFound } from '@hcp/domain';
import type { CallContext, PowerState, VmDescription } from '../spi/provider-driver';
import type { VsphereCluster } from './vsphere-cluster';
import { VM_PATHS, type VmRecord, allVms, objectProperties, vmRecordOf } from './vsphere-inventory';
import { tagsOf } from './vsphere-tags';

export const HCP_ID_KEY = 'hcp.id';

/** The VM name HCP gives: unique per HCP id, so a repeated clone meets DuplicateName instead of making a second VM. */
export function vmNameOf(hcpId: string): string {
  return `hcp-${hcpId}`;
}

export async function findVm(cluster: VsphereCluster, hcpId: string, ctx: CallContext): Promise<VmRecord | undefined> {
  const vms = await allVms(cluster.client, ctx);
  return vms.find((vm) => !vm.template && vm.extra[HCP_ID_KEY] === hcpId);
}

/**
 * The VM of this HCP id for a delete: also a clone named after it that never got its HCP keys (a
 * create whose clone answer was lost, on a vCenter that had not applied the clone's config yet).
 */
export async function findVmToDelete(
  cluster: VsphereCluster,
  hcpId: string,
  ctx: CallContext,
): Promise<VmRecord | undefined> {
  const vms = (await allVms(cluster.client, ctx)).filter((vm) => !vm.template);
  const name = vmNameOf(hcpId);
  return (
    vms.find((vm) => vm.extra[HCP_ID_KEY] === hcpId) ??
    vms.find((vm) => vm.name === name && vm.extra[HCP_ID_KEY] === undefined)
  );
}

export async function requireVm(cluster: VsphereCluster, hcpId: string, ctx: CallContext): Promise<VmRecord> {
  const vm = await findVm(cluster, hcpId, ctx);
  if (!vm) throw notFound(`VM ${hcpId}`);
  return vm;
}

/** The VM's properties now; NOT_FOUND when it is gone. */
export async function reread(cluster: VsphereCluster, vm: VmRecord, ctx: CallContext): Promise<VmRecord> {
  const props = await objectProperties(cluster.client, vm.ref, VM_PATHS, ctx).catch((err) => {
    if ((err as { code?: string }).code === 'NOT_FOUND') return undefined;
    throw err;
  });
  if (!props) throw notFound(`VM ${vm.extra[HCP_ID_KEY] ?? ''}`.trim());
  return vmRecordOf({ obj: vm.ref, props });
}

export function powerOf(vm: VmRecord): PowerState {
  switch (vm.power) {
    case 'poweredOn':
      return 'running';
    case 'poweredOff':
      return 'stopped';
    case 'suspended':
      return 'paused';
    default:
      return 'unknown';
  }
}

export function describe(cluster: VsphereCluster, hcpId: string, vm: VmRecord): VmDescription {
  const power = powerOf(vm);
  return {
    hcp_id: hcpId,
    power_state: power,
    addresses: power === 'running' ? vm.addresses : [],
    provider_ref: { provider_id: cluster.providerId, cluster_id: cluster.clusterId, moref: vm.ref.value },
    tags: tagsOf(vm.extra),
  };
}
