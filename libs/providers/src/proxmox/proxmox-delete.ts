/**
 * Deleting a VM on Proxmox: a running VM is powered off first (Proxmox refuses to destroy it), then
 * destroyed with its disks. A VM that is already gone counts as deleted.
 */
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { isVmMissing } from './proxmox-errors';
import { hardStop } from './proxmox-power';
import { waitTask, withLockRetry } from './proxmox-tasks';
import { ids, readVmStatus, type VmRef } from './proxmox-vm-lookup';

export async function destroyVm(cluster: ProxmoxCluster, loc: VmRef, ctx: CallContext): Promise<void> {
  await withLockRetry(cluster, ctx, 'delete', async () => {
    try {
      const st = await readVmStatus(cluster, loc, ctx);
      if (st.status === 'running') await hardStop(cluster, loc, ctx);
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
