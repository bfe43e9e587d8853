/**
 * Deleting a VM on Proxmox: a running VM is shut down first (Proxmox refuses to destroy it): the guest
 * is asked to shut down within the cluster's shutdown_timeout_s (cut to fit the deadline), with
 * `forceStop` so Proxmox powers it off when that passes; a cluster with shutdown_timeout_s 0 powers off
 * at once. Then the VM is destroyed with its disks. A VM that is already gone counts as deleted.
 */
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { isVmMissing } from './proxmox-errors';
import { gracefulStop, hardStop } from './proxmox-power';
import { waitTask, withLockRetry } from './proxmox-tasks';
import { ids, readVmStatus, type VmRef } from './proxmox-vm-lookup';

export async function destroyVm(cluster: ProxmoxCluster, loc: VmRef, ctx: CallContext): Promise<void> {
  await withLockRetry(cluster, ctx, 'delete', async () => {
    try {
      const st = await readVmStatus(cluster, loc, ctx);
      if (st.status === 'running') {
        if (cluster.settings.shutdown_timeout_s === 0) await hardStop(cluster, loc, ctx);
        else await gracefulStop(cluster, loc, ctx, { forceStop: true });
      }
      const upid = await cluster.client.delete('/nodes/{node}/qemu/{vmid}', ids(loc), ctx, {
        params: { purge: true, 'destroy-unreferenced-disks': true },
      });
      await waitTask(cluster, upid, loc.node, ctx);
    } catch (err) {
      if (isVmMissing(err)) return;
      throw err;
    }
  });
}
