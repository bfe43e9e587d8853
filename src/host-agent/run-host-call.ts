import { HcpError } from '@hcp/domain';
import type { HostCallRequest } from '@hcp/host-protocol';
import type { CallContext } from '@hcp/providers';
import type { HostDriver } from './host-driver';

export interface RunHostCallOptions {
  /** The address HCP reaches this host's VNC servers on, when it is not the one the driver listens on. */
  consoleHost?: string;
}

/**
 * One host call, on the local driver: the only place that knows which driver method an op is. The value
 * returned is what the outcome carries (hostCallValueSchemas on HCP's side).
 */
export async function runHostCall(
  driver: HostDriver,
  request: HostCallRequest,
  ctx: CallContext,
  options: RunHostCallOptions = {},
): Promise<unknown> {
  switch (request.op) {
    case 'create':
      return driver.createVm(request.spec, ctx);
    case 'start':
      return driver.startVm(request.hcp_id, ctx);
    case 'stop':
      return driver.stopVm(request.hcp_id, request.force, ctx);
    case 'reboot':
      return driver.rebootVm(request.hcp_id, request.force, ctx);
    case 'delete':
      await driver.deleteVm(request.hcp_id, ctx);
      return null;
    case 'describe':
      return driver.describeVm(request.hcp_id, ctx);
    case 'list':
      if (!driver.listVms) throw unsupported('list');
      return driver.listVms(ctx);
    case 'update_tags':
      if (!driver.updateTags) throw unsupported('update_tags');
      await driver.updateTags(request.hcp_id, request.tags, ctx);
      return null;
    case 'console': {
      const endpoint = await driver.consoleEndpoint(request.hcp_id, ctx);
      // The driver knows where QEMU listens on this host; HCP may need another address to reach it.
      return options.consoleHost ? { ...endpoint, host: options.consoleHost } : endpoint;
    }
    case 'check':
      await driver.checkConnectivity(ctx);
      return null;
  }
}

const unsupported = (op: string) =>
  new HcpError('FEATURE_NOT_SUPPORTED', `this host's driver does not support ${op}`, { op });
