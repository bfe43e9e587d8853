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
  readonly eventTypes: ReadonlySet<string> = new Set([
    'VmCreateRequested',
    'VmDeleted',
    'VmOperationFailed',
  ] satisfies Array<VmEvent['type']>);

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const allocated: Array<{ vm_id: string; cluster_id: string; vcpus: number; ram_mb: number; disk_gb: number }> = [];
    const released: string[] = [];
    for (const { event, streamId } of events) {
      const vm = event as VmEvent;
      const vmId = streamId.slice(VM_STREAM_PREFIX.length);
      if (vm.type === 'VmCreateRequested') {
        allocated.push({ vm_id: vmId, cluster_id: vm.data.placement.cluster_id, ...pick(vm.data.resources) });
      } else if (vm.type === 'VmDeleted' || (vm.type === 'VmOperationFailed' && vm.data.operation === 'create')) {
        released.push(vmId);
      }
    }
    // Allocations first, releases second: a VM's release always follows its allocation in its stream, so
    // this order gives what applying the batch event by event would; an allocation already held (or a
    // release of nothing) changes no total, whatever replays.
    if (allocated.length) {
      await tx.query(
        `WITH added AS (
           INSERT INTO cluster_allocations (vm_id, cluster_id, vcpus, ram_mb, disk_gb)
           SELECT a.vm_id, a.cluster_id, a.vcpus, a.ram_mb, a.disk_gb
           FROM jsonb_to_recordset($1::jsonb) AS a(vm_id uuid, cluster_id text, vcpus int, ram_mb int, disk_gb int)
           ON CONFLICT (vm_id) DO NOTHING
           RETURNING cluster_id, vcpus, ram_mb, disk_gb)
         ${ADD_TO_USAGE('added', 1)}`,
        [JSON.stringify(allocated)],
      );
    }
    if (released.length) {
      await tx.query(
        `WITH removed AS (DELETE FROM cluster_allocations WHERE vm_id = ANY($1::uuid[]) RETURNING cluster_id, vcpus, ram_mb, disk_gb)
         ${ADD_TO_USAGE('removed', -1)}`,
        [released],
      );
    }
  }
}

const pick = ({ vcpus, ram_mb, disk_gb }: { vcpus: number; ram_mb: number; disk_gb: number }) => ({
  vcpus,
  ram_mb,
  disk_gb,
});

/** Adds (sign 1) or takes away (sign -1) the rows of `source` from their clusters' totals, one row per cluster. */
const ADD_TO_USAGE = (source: string, sign: 1 | -1) => `
  INSERT INTO cluster_usage (cluster_id, instances, vcpus, ram_mb, disk_gb)
  SELECT cluster_id, ${sign} * count(*), ${sign} * sum(vcpus), ${sign} * sum(ram_mb), ${sign} * sum(disk_gb) FROM ${source} GROUP BY cluster_id
  ON CONFLICT (cluster_id) DO UPDATE SET instances = cluster_usage.instances + EXCLUDED.instances, vcpus = cluster_usage.vcpus + EXCLUDED.vcpus,
    ram_mb = cluster_usage.ram_mb + EXCLUDED.ram_mb, disk_gb = cluster_usage.disk_gb + EXCLUDED.disk_gb`;
