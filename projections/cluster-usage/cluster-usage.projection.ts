import { EntityManager } from 'typeorm';
import { VM_STREAM_PREFIX, VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { RebuildableProjection } from '../runner/projection-rebuild';

/**
 * What each cluster has allocated, for placement: a VM counts from its create request until it is
 * deleted or its create failed. Kept incrementally (one row per cluster) so placing a VM never sums
 * over all VMs.
 */
export class ClusterUsageProjection implements RebuildableProjection {
  readonly name = 'cluster-usage';
  readonly tables = ['cluster_usage', 'cluster_allocations'];
  readonly streamPrefixes = [VM_STREAM_PREFIX];

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    for (const { event, streamId } of events) {
      const vm = event as VmEvent;
      const vmId = streamId.slice(VM_STREAM_PREFIX.length);
      if (vm.type === 'VmCreateRequested') {
        const { cluster_id } = vm.data.placement;
        const { vcpus, ram_mb, disk_gb } = vm.data.resources;
        const inserted = await tx.query(
          `INSERT INTO cluster_allocations (vm_id, cluster_id, vcpus, ram_mb, disk_gb) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (vm_id) DO NOTHING RETURNING cluster_id`,
          [vmId, cluster_id, vcpus, ram_mb, disk_gb],
        );
        if (inserted.length) await adjust(tx, cluster_id, 1, { vcpus, ram_mb, disk_gb });
      } else if (vm.type === 'VmDeleted' || (vm.type === 'VmOperationFailed' && vm.data.operation === 'create')) {
        const released = await tx.query(`DELETE FROM cluster_allocations WHERE vm_id = $1 RETURNING cluster_id, vcpus, ram_mb, disk_gb`, [vmId]);
        if (released.length) await adjust(tx, released[0].cluster_id, -1, { vcpus: -released[0].vcpus, ram_mb: -released[0].ram_mb, disk_gb: -released[0].disk_gb });
      }
    }
  }
}

async function adjust(tx: EntityManager, clusterId: string, instances: number, r: { vcpus: number; ram_mb: number; disk_gb: number }): Promise<void> {
  await tx.query(
    `INSERT INTO cluster_usage (cluster_id, instances, vcpus, ram_mb, disk_gb) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (cluster_id) DO UPDATE SET instances = cluster_usage.instances + EXCLUDED.instances, vcpus = cluster_usage.vcpus + EXCLUDED.vcpus,
       ram_mb = cluster_usage.ram_mb + EXCLUDED.ram_mb, disk_gb = cluster_usage.disk_gb + EXCLUDED.disk_gb`,
    [clusterId, instances, r.vcpus, r.ram_mb, r.disk_gb],
  );
}
