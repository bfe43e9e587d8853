import { type Capabilities, NO_CAPABILITIES } from '@hcp/domain';
import type { ConsoleEndpoint, HostCapacity } from '@hcp/host-protocol';
import type { CallContext, CreateVmSpec, ProviderConsole, VmDescription } from '@hcp/providers';
import { HcpError } from '@hcp/domain';
import type { HostDriver } from '../../../src/host-agent/host-driver';

export type DriverMethod =
  | 'createVm'
  | 'startVm'
  | 'stopVm'
  | 'rebootVm'
  | 'deleteVm'
  | 'describeVm'
  | 'listVms'
  | 'updateTags'
  | 'consoleEndpoint'
  | 'hostCapacity'
  | 'checkConnectivity';

export interface RecordedHostDriverCall {
  method: DriverMethod;
  args: unknown[];
  ctx: CallContext;
}

/**
 * The agent's local driver, in memory: records every call (heartbeats make hostCapacity and listVms calls
 * too) and answers a running VM, unless a method was given another answer with `answer`.
 */
export class HostDriverDouble implements HostDriver {
  readonly type = 'libvirt';
  readonly calls: RecordedHostDriverCall[] = [];
  private readonly answers = new Map<DriverMethod, (args: unknown[], ctx: CallContext) => Promise<unknown>>();

  constructor(private readonly caps: Capabilities = { ...NO_CAPABILITIES, console_types: ['vnc'], reboot: true }) {}

  /** From now on `method` answers with what `answer` resolves or throws. */
  answer(method: DriverMethod, answer: (args: unknown[], ctx: CallContext) => Promise<unknown>): this {
    this.answers.set(method, answer);
    return this;
  }

  callsOf(method: DriverMethod): RecordedHostDriverCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  capabilities(): Capabilities {
    return this.caps;
  }

  createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    return this.call('createVm', [spec], ctx, () => running(spec.hcp_id));
  }
  startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    return this.call('startVm', [hcpId], ctx, () => running(hcpId));
  }
  stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.call('stopVm', [hcpId, force], ctx, () => ({ ...running(hcpId), power_state: 'stopped' }));
  }
  rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.call('rebootVm', [hcpId, force], ctx, () => running(hcpId));
  }
  deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    return this.call('deleteVm', [hcpId], ctx, () => undefined);
  }
  describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    return this.call('describeVm', [hcpId], ctx, () => running(hcpId));
  }
  listVms(ctx: CallContext): Promise<VmDescription[]> {
    return this.call('listVms', [], ctx, () => [running('vm-listed')]);
  }
  updateTags(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void> {
    return this.call('updateTags', [hcpId, tags], ctx, () => undefined);
  }
  consoleEndpoint(hcpId: string, ctx: CallContext): Promise<ConsoleEndpoint> {
    return this.call('consoleEndpoint', [hcpId], ctx, () => ({ host: '127.0.0.1', port: 5901, password: 'once' }));
  }
  hostCapacity(ctx: CallContext): Promise<HostCapacity> {
    return this.call('hostCapacity', [], ctx, () => ({ vcpus: 8, ram_mb: 16_384, free_ram_mb: 12_000 }));
  }
  checkConnectivity(ctx: CallContext): Promise<void> {
    return this.call('checkConnectivity', [], ctx, () => undefined);
  }
  async openConsole(): Promise<ProviderConsole> {
    throw new HcpError('FEATURE_NOT_SUPPORTED', 'the agent relays consoles by endpoint');
  }

  private async call<T>(method: DriverMethod, args: unknown[], ctx: CallContext, fallback: () => T): Promise<T> {
    this.calls.push({ method, args, ctx });
    const answer = this.answers.get(method);
    return (answer ? await answer(args, ctx) : fallback()) as T;
  }
}

export function running(hcpId: string): VmDescription {
  return {
    hcp_id: hcpId,
    power_state: 'running',
    addresses: [],
    provider_ref: { provider_id: '', cluster_id: 'cluster-1', domain: `hcp-${hcpId}` },
  };
}
