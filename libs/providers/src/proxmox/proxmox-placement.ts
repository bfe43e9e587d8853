/**
 * Where a new VM goes: which template to clone and on which node the clone lands, chosen from one
 * read of `/cluster/resources`.
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

/**
 * Where to clone from and to: the online node (of the cluster's `nodes`) with the most free memory
 * that holds the template, or, when the target storage is shared, the best node overall with
 * `target` set.
 */
export function planClone(resources: ClusterResource[], imageRef: string, settings: ProxmoxSettings): ClonePlan {
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
  const templates = resources.filter(
    (r) =>
      r.type === 'qemu' &&
      isTemplate(r) &&
      typeof r.node === 'string' &&
      (String(r.vmid) === imageRef || r.name === imageRef),
  );
  if (templates.length === 0) {
    throw new HcpError(
      'INVALID_REQUEST',
      'the image is not available on this cluster (no template matches its reference)',
      {
        provider: { image_ref: imageRef },
      },
      false,
    );
  }
  const free = (n: ClusterResource) => (n.maxmem ?? 0) - (n.mem ?? 0);
  const best = (list: ClusterResource[]) => list.reduce((a, b) => (free(b) > free(a) ? b : a));
  const shared =
    settings.full_clone &&
    !!settings.storage &&
    resources.some((r) => r.type === 'storage' && r.storage === settings.storage && truthy(r.shared));

  let target: ClusterResource;
  let template: ClusterResource;
  if (shared) {
    target = best(nodes);
    template = templates.find((t) => t.node === target.node) ?? templates[0];
  } else {
    const holding = nodes.filter((n) => templates.some((t) => t.node === n.node));
    if (holding.length === 0) {
      throw new HcpError(
        'INVALID_REQUEST',
        'the image is not available on this cluster (its template is on no host the cluster may use)',
        {
          provider: { image_ref: imageRef, nodes: nodes.map((n) => n.node) },
        },
        false,
      );
    }
    target = best(holding);
    template = templates.find((t) => t.node === target.node)!;
  }
  if (settings.full_clone && settings.storage) {
    const available = resources.some(
      (r) => r.type === 'storage' && r.storage === settings.storage && r.node === target.node,
    );
    if (!available) {
      throw new HcpError(
        'INVALID_REQUEST',
        "the cluster's storage is not available on the chosen host",
        {
          provider: { storage: settings.storage, node: target.node },
        },
        false,
      );
    }
  }
  return { templateNode: template.node!, templateVmid: template.vmid!, targetNode: target.node! };
}
