/**
 * Power on vSphere. A VM already in the target state gets no task. A graceful stop asks the guest
 * (ShutdownGuest, through VMware Tools) and waits for poweredOff until the cluster's shutdown timeout
 * or the deadline (less a margin for the power-off behind it); a guest without tools is powered
 * off at once. A graceful reboot (RebootGuest) falls back to a reset when the guest has no tools.
 */
import { conflict } from '@hcp/domain';
import { pause } from '../common/pause';
import type { CallContext } from '../spi/provider-driver';
import type { VsphereCluster } from './vsphere-cluster';
import { faultType } from './vsphere-faults';
import type { VmRecord } from './vsphere-inventory';
import { runTask, withTransientRetry } from './vsphere-tasks';
import { reread } from './vsphere-vm';

/** Runs a power task; a VM that reached the wanted state meanwhile (InvalidPowerState) is success. */
async function powerTask(
  cluster: VsphereCluster,
  vm: VmRecord,
  method: string,
  reached: (vm: VmRecord) => boolean,
  ctx: CallContext,
): Promise<void> {
  try {
    await runTask(cluster.client, method, vm.ref, {}, cluster.timing, ctx);
  } catch (err) {
    if (faultType(err) === 'InvalidPowerState' && reached(await reread(cluster, vm, ctx))) return;
    throw err;
  }
}

const isOn = (vm: VmRecord) => vm.power === 'poweredOn';
const isOff = (vm: VmRecord) => vm.power === 'poweredOff';

export async function ensureRunning(cluster: VsphereCluster, vm: VmRecord, ctx: CallContext): Promise<void> {
  if (isOn(vm)) return;
  await powerTask(cluster, vm, 'PowerOnVM_Task', isOn, ctx);
}

export async function hardStop(cluster: VsphereCluster, vm: VmRecord, ctx: CallContext): Promise<void> {
  if (isOff(vm)) return;
  await powerTask(cluster, vm, 'PowerOffVM_Task', isOff, ctx);
}

export async function gracefulStop(cluster: VsphereCluster, vm: VmRecord, ctx: CallContext): Promise<void> {
  if (isOff(vm)) return;
  const waitMs = Math.min(
    cluster.settings.shutdown_timeout_s * 1000,
    ctx.deadline.getTime() - Date.now() - cluster.timing.stopMarginMs,
  );
  // A suspended guest cannot hear a shutdown request.
  if (vm.power === 'poweredOn' && waitMs > 0) {
    let asked = true;
    try {
      await withTransientRetry(cluster.timing, ctx, 'ShutdownGuest', () =>
        cluster.client.call('ShutdownGuest', vm.ref, {}, ctx),
      );
    } catch (err) {
      const fault = faultType(err);
      if (fault === 'InvalidPowerState' && isOff(await reread(cluster, vm, ctx))) return;
      // No tools in the guest: nobody to ask, so power off.
      if (fault !== 'ToolsUnavailable' && fault !== 'InvalidPowerState') throw err;
      asked = false;
    }
    if (asked) {
      const until = Date.now() + waitMs;
      for (;;) {
        const now = await reread(cluster, vm, ctx);
        if (isOff(now)) return;
        if (Date.now() + cluster.timing.shutdownPollMs >= until) break;
        await pause(cluster.timing.shutdownPollMs, ctx, 'shutdown');
      }
    }
  }
  await powerTask(cluster, await reread(cluster, vm, ctx), 'PowerOffVM_Task', isOff, ctx);
}

/** A guest reboot, or with `force` (or a guest without tools) a reset. CONFLICT when the VM is not running. */
export async function rebootOrReset(
  cluster: VsphereCluster,
  hcpId: string,
  vm: VmRecord,
  force: boolean,
  ctx: CallContext,
): Promise<void> {
  if (!isOn(vm))
    throw conflict(`VM ${hcpId} is not running`, { power_state: vm.power === 'suspended' ? 'paused' : 'stopped' });
  if (!force) {
    try {
      await withTransientRetry(cluster.timing, ctx, 'RebootGuest', () =>
        cluster.client.call('RebootGuest', vm.ref, {}, ctx),
      );
      return;
    } catch (err) {
      if (faultType(err) !== 'ToolsUnavailable') throw err;
    }
  }
  await runTask(cluster.client, 'ResetVM_Task', vm.ref, {}, cluster.timing, ctx);
}
