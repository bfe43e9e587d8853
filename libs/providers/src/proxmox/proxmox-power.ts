/**
 * Power on Proxmox: start (or resume), graceful stop with a hard stop behind it, hard stop, reboot
 * (or reset). Each waits for its task and retries while the VM is locked.
 */
import { conflict } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { ProxmoxTaskError, messageMatches } from './proxmox-errors';
import { waitTask, withLockRetry } from './proxmox-tasks';
import { ids, readVmStatus, type VmRef } from './proxmox-vm-lookup';

export async function ensureRunning(cluster: ProxmoxCluster, loc: VmRef, ctx: CallContext): Promise<void> {
  const st = await readVmStatus(cluster, loc, ctx);
  if (st.status === 'running') {
    if (st.qmpstatus === 'paused') {
      await withLockRetry(cluster, ctx, 'resume', async () => {
        const upid = await cluster.client.post('/nodes/{node}/qemu/{vmid}/status/resume', ids(loc), ctx);
        await waitTask(cluster, upid, loc.node, ctx);
      });
    }
    return;
  }
  await withLockRetry(cluster, ctx, 'start', async () => {
    try {
      const upid = await cluster.client.post('/nodes/{node}/qemu/{vmid}/status/start', ids(loc), ctx);
      await waitTask(cluster, upid, loc.node, ctx);
    } catch (err) {
      if (messageMatches(err, /already running/i)) return;
      throw err;
    }
  });
}

/**
 * ACPI/agent shutdown with a timeout, then a hard stop if the guest is still up. With `forceStop`
 * Proxmox itself powers the VM off when the timeout passes (one task instead of a failed one and a
 * stop); the hard stop behind it stays for a shutdown refused outright (a paused VM).
 */
export async function gracefulStop(
  cluster: ProxmoxCluster,
  loc: VmRef,
  ctx: CallContext,
  options: { forceStop?: boolean } = {},
): Promise<void> {
  const timeout = shutdownTimeoutS(cluster, ctx);
  if (timeout > 0) {
    try {
      await withLockRetry(cluster, ctx, 'shutdown', async () => {
        const upid = await cluster.client.post('/nodes/{node}/qemu/{vmid}/status/shutdown', ids(loc), ctx, {
          params: { timeout, ...(options.forceStop ? { forceStop: true } : {}) },
        });
        await waitTask(cluster, upid, loc.node, ctx);
      });
    } catch (err) {
      if (messageMatches(err, /not running/i)) return;
      // The guest ignored the request ("got timeout") or cannot shut down (paused): power it off.
      if (!(err instanceof ProxmoxTaskError || messageMatches(err, /is paused|cannot shutdown/i))) throw err;
    }
    if ((await readVmStatus(cluster, loc, ctx)).status === 'stopped') return;
  }
  await hardStop(cluster, loc, ctx);
}

export async function hardStop(cluster: ProxmoxCluster, loc: VmRef, ctx: CallContext): Promise<void> {
  await withLockRetry(cluster, ctx, 'stop', async () => {
    const upid = await cluster.client.post('/nodes/{node}/qemu/{vmid}/status/stop', ids(loc), ctx);
    await waitTask(cluster, upid, loc.node, ctx);
  });
}

/** A guest reboot (given the same time as a graceful stop), or with `force` a reset. */
export async function rebootOrReset(
  cluster: ProxmoxCluster,
  hcpId: string,
  loc: VmRef,
  force: boolean,
  ctx: CallContext,
): Promise<void> {
  await withLockRetry(cluster, ctx, 'reboot', async () => {
    try {
      const upid = force
        ? await cluster.client.post('/nodes/{node}/qemu/{vmid}/status/reset', ids(loc), ctx)
        : await cluster.client.post('/nodes/{node}/qemu/{vmid}/status/reboot', ids(loc), ctx, {
            params: { timeout: shutdownTimeoutS(cluster, ctx) },
          });
      await waitTask(cluster, upid, loc.node, ctx);
    } catch (err) {
      if (messageMatches(err, /not running/i)) throw conflict(`VM ${hcpId} is not running`, { power_state: 'stopped' });
      throw err;
    }
  });
}

/** The cluster's graceful timeout, cut so that a hard stop still fits before the deadline. */
function shutdownTimeoutS(cluster: ProxmoxCluster, ctx: CallContext): number {
  const leftS = Math.floor((ctx.deadline.getTime() - Date.now() - cluster.timing.stopMarginMs) / 1000);
  return Math.max(0, Math.min(cluster.settings.shutdown_timeout_s, leftS));
}
