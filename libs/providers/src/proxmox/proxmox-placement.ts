/**
 * Where a new VM goes: which template to clone and on which node the clone lands, chosen from one
 * read of `/cluster/resources` and the storages of the candidate templates' disks.
 *
 * Proxmox clones to another node (`target`) only when every source volume of the template, the
 * cloud-init drive included, is on shared storage; otherwise it answers 500 "can't clone VM to node
 * '<n>' (VM uses local storage)". So a template on local storage is cloned on its own node, and only a
 * template whose volumes are all shared may land anywhere.
 */
import { HcpError } from '@hcp/domain';
import type { ProxmoxSettings } from './proxmox-config';
import { isTemplate, type ClusterResource } from './proxmox-translate';

export interface ClonePlan {
  templateNode: string;
  templateVmid: number;
  targetNode: string;
}

const truthy = (v: unknown) => v === 1 || v === true || v === '1';

/** The templates that an image reference names (by VMID or name); INVALID_REQUEST when none. */
export function templatesFor(resources: ClusterResource[], imageRef: string): ClusterResource[] {
  const templates = resources.filter(
    (r) =>
      r.type === 'qemu' &&
      isTemplate(r) &&
      typeof r.node === 'string' &&
      typeof r.vmid === 'number' &&
      (String(r.vmid) === imageRef || r.name === imageRef),
  );
  if (templates.length === 0) {
    throw new HcpError(
      'INVALID_REQUEST',
      'the image is not available on this cluster (no template matches its reference)',
      { provider: { image_ref: imageRef } },
      false,
    );
  }
  return templates;
}

/**
 * Where to clone from and to: among the template's own nodes and, for a template whose volumes are all
 * on shared storage (and a full clone whose target storage is shared too), every node, the online one
 * (of the cluster's `nodes`) with the most free memory; the template's own node wins a tie.
 * `sourceStorages` holds, by template VMID, the storages of its volumes (absent: unknown, so kept home).
 */
export function planClone(
  resources: ClusterResource[],
  imageRef: string,
  settings: ProxmoxSettings,
  sourceStorages: ReadonlyMap<number, string[]>,
): ClonePlan {
  const nodes = resources.filter(
    (r) =>
      r.type === 'node' &&
      r.status === 'online' &&
      typeof r.node === 'string' &&
      (!settings.nodes || settings.nodes.includes(r.node)),
  );
  if (nodes.length === 0) {
    throw new HcpError(
      'PROVIDER_UNAVAILABLE',
      'no host of this cluster is online',
      settings.nodes ? { provider: { nodes: settings.nodes } } : undefined,
    );
  }
  const templates = templatesFor(resources, imageRef);
  const shared = (storage: string) =>
    resources.some((r) => r.type === 'storage' && r.storage === storage && truthy(r.shared));
  const targetStorage = settings.full_clone ? settings.storage : undefined;
  const movable = (t: ClusterResource) => {
    const storages = sourceStorages.get(t.vmid!);
    return !!storages && storages.every(shared) && (!targetStorage || shared(targetStorage));
  };
  const storageOn = (node: string) =>
    !targetStorage || resources.some((r) => r.type === 'storage' && r.storage === targetStorage && r.node === node);

  const free = (n: ClusterResource) => (n.maxmem ?? 0) - (n.mem ?? 0);
  let best: { template: ClusterResource; target: ClusterResource } | undefined;
  for (const template of templates) {
    for (const target of nodes) {
      const home = target.node === template.node;
      if (!home && !movable(template)) continue;
      if (!best) {
        best = { template, target };
        continue;
      }
      const gain = free(target) - free(best.target);
      const bestHome = best.target.node === best.template.node;
      if (gain > 0 || (gain === 0 && home && !bestHome)) best = { template, target };
    }
  }
  if (!best) {
    throw new HcpError(
      'INVALID_REQUEST',
      'the image is not available on this cluster (its template is on no host the cluster may use, and on local storage)',
      { provider: { image_ref: imageRef, nodes: nodes.map((n) => n.node) } },
      false,
    );
  }
  if (!storageOn(best.target.node!)) {
    throw new HcpError(
      'INVALID_REQUEST',
      "the cluster's storage is not available on the chosen host",
      { provider: { storage: targetStorage, node: best.target.node } },
      false,
    );
  }
  return { templateNode: best.template.node!, templateVmid: best.template.vmid!, targetNode: best.target.node! };
}
