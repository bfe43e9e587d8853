import type { ProviderDriver } from '../spi/provider-driver';
import type { CallSlots } from './call-slots';

/**
 * `driver` with its changes at the provider (create, power, delete, tags) run through `slots`: what
 * bounds the work HCP puts on one provider cluster at once, whatever the number of jobs a worker runs.
 * Reads (describe, list, connectivity) and consoles go straight through: they start no task at the
 * provider, and the reconcile loop and a tenant's console must not wait behind a burst of creates.
 */
export function slottedDriver(driver: ProviderDriver, slots: CallSlots): ProviderDriver {
  const slotted: ProviderDriver = {
    type: driver.type,
    capabilities: () => driver.capabilities(),
    createVm: (spec, ctx) => slots.run('createVm', ctx, () => driver.createVm(spec, ctx)),
    startVm: (hcpId, ctx) => slots.run('startVm', ctx, () => driver.startVm(hcpId, ctx)),
    stopVm: (hcpId, force, ctx) => slots.run('stopVm', ctx, () => driver.stopVm(hcpId, force, ctx)),
    rebootVm: (hcpId, force, ctx) => slots.run('rebootVm', ctx, () => driver.rebootVm(hcpId, force, ctx)),
    deleteVm: (hcpId, ctx) => slots.run('deleteVm', ctx, () => driver.deleteVm(hcpId, ctx)),
    describeVm: (hcpId, ctx) => driver.describeVm(hcpId, ctx),
    openConsole: (hcpId, type, ctx) => driver.openConsole(hcpId, type, ctx),
    checkConnectivity: (ctx) => driver.checkConnectivity(ctx),
  };
  // Optional parts of the SPI stay absent when the driver lacks them (callers test for them).
  const { listVms, updateTags, close } = driver;
  if (listVms) slotted.listVms = (ctx) => listVms.call(driver, ctx);
  if (updateTags)
    slotted.updateTags = (hcpId, tags, ctx) =>
      slots.run('updateTags', ctx, () => updateTags.call(driver, hcpId, tags, ctx));
  if (close) slotted.close = () => close.call(driver);
  return slotted;
}
