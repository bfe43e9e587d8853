import type { VmState } from '@hcp/domain';
import type { VmDescription } from '@hcp/providers';

/** One VM the provider reported in a cluster scan, beside what HCP has recorded for its HCP id. */
export interface ScannedResource {
  description: VmDescription;
  /** HCP's record of the VM with this id (a deleted or failed one included); null when HCP has none. */
  vm: VmState | null;
}

/**
 * Published on the Nest EventBus after the reconcile loop has listed every VM of a cluster that carries
 * an HCP id (one `listVms` pass). The reconcile loop acts on the VMs HCP knows as live; the orphans
 * context reads the rest from the same scan, so the provider is listed once per cluster and period.
 */
export class ClusterScanned {
  constructor(
    readonly provider_id: string,
    readonly cluster_id: string,
    /** When the listing was taken (RFC 3339). */
    readonly scanned_at: string,
    readonly resources: readonly ScannedResource[],
  ) {}
}
