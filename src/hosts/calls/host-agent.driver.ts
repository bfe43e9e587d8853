import { connect } from 'node:net';
import type { Capabilities, ConsoleType } from '@hcp/domain';
import { HcpError } from '@hcp/domain';
import { type HostCallOp, type HostCallRequest, hostCallValueSchemas } from '@hcp/host-protocol';
import type { CallContext, CreateVmSpec, ProviderConsole, ProviderDriver, VmDescription } from '@hcp/providers';
import type { z } from 'zod';
import { HostCallQueue } from './host-call-queue';
import { HostPlacements } from './host-placements';

export interface HostAgentDriverOptions {
  type: string;
  providerId: string;
  clusterId: string;
  capabilities: Capabilities;
  /** A host whose last heartbeat is older than this is offline: nothing new is placed on it. */
  heartbeatTimeoutMs: number;
  /** How often a waiting call looks at the table when no change in this process wakes it. */
  pollMs: number;
  calls: HostCallQueue;
  placements: HostPlacements;
}

type Value<O extends HostCallOp> = z.infer<(typeof hostCallValueSchemas)[O]>;

/**
 * The driver of an agent cluster, as HCP's jobs and loops use it: each SPI call becomes one host call for
 * the VM's host (placed on a live host with room at create), which that host's agent runs on its own
 * driver (libvirt). The agent's answer is outside input and validated before anything records it. A call
 * nobody took by its deadline is PROVIDER_UNAVAILABLE (the host's agent is down); one taken but not
 * finished is PROVIDER_TIMEOUT; both retryable, and the next attempt finds the same host.
 */
export class HostAgentDriver implements ProviderDriver {
  readonly type: string;

  constructor(private readonly options: HostAgentDriverOptions) {
    this.type = options.type;
  }

  capabilities(): Capabilities {
    return this.options.capabilities;
  }

  async createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    const { host_id } = await this.options.placements.place(
      spec.hcp_id,
      this.options.clusterId,
      spec,
      this.options.heartbeatTimeoutMs,
    );
    const { placement_hints: _hints, ...wire } = spec;
    return this.described(host_id, await this.call(host_id, { op: 'create', spec: wire }, ctx));
  }

  async startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    const host = await this.hostOf(hcpId);
    return this.described(host, await this.call(host, { op: 'start', hcp_id: hcpId }, ctx));
  }

  async stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    const host = await this.hostOf(hcpId);
    return this.described(host, await this.call(host, { op: 'stop', hcp_id: hcpId, force }, ctx));
  }

  async rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    const host = await this.hostOf(hcpId);
    return this.described(host, await this.call(host, { op: 'reboot', hcp_id: hcpId, force }, ctx));
  }

  async deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    const placed = await this.options.placements.hostOf(hcpId);
    // Never placed: no host ever heard of this VM, so there is nothing to delete.
    if (!placed) return;
    await this.call(placed.host_id, { op: 'delete', hcp_id: hcpId }, ctx);
    await this.options.placements.remove(hcpId);
  }

  async describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    const placed = await this.options.placements.hostOf(hcpId);
    if (!placed) return null;
    const found = await this.call(placed.host_id, { op: 'describe', hcp_id: hcpId }, ctx);
    return found ? this.described(placed.host_id, found) : null;
  }

  /**
   * Every VM of the cluster, from every host that is online or holds a VM. A host that cannot answer
   * fails the listing: its VMs would otherwise look vanished.
   */
  async listVms(ctx: CallContext): Promise<VmDescription[]> {
    const hosts = await this.options.placements.hostsToList(this.options.clusterId, this.options.heartbeatTimeoutMs);
    const offline = hosts.filter((h) => !h.online);
    if (offline.length > 0) {
      throw new HcpError(
        'PROVIDER_UNAVAILABLE',
        `${offline.length} host(s) of this cluster holding VMs are offline; the cluster cannot be listed`,
        { offline_hosts: offline.map((h) => h.id) },
      );
    }
    const lists = await Promise.all(
      hosts.map(async (h) => (await this.call(h.id, { op: 'list' }, ctx)).map((vm) => this.described(h.id, vm))),
    );
    return lists.flat();
  }

  async updateTags(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void> {
    const host = await this.hostOf(hcpId);
    await this.call(host, { op: 'update_tags', hcp_id: hcpId, tags }, ctx);
  }

  /**
   * The agent sets a fresh VNC password on the VM's display and says where it listens; HCP's console
   * proxy connects there itself (the host's display address must be reachable from HCP).
   */
  async openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    if (type !== 'vnc' || !this.options.capabilities.console_types.includes('vnc'))
      throw new HcpError('FEATURE_NOT_SUPPORTED', `agent clusters offer vnc consoles, not ${type}`, {
        capability: `console:${type}`,
      });
    const host = await this.hostOf(hcpId);
    const endpoint = await this.call(host, { op: 'console', hcp_id: hcpId, type: 'vnc' }, ctx);
    const stream = await new Promise<ProviderConsole['stream']>((resolve, reject) => {
      const socket = connect({ host: endpoint.host, port: endpoint.port });
      const fail = (err: Error) => {
        socket.destroy();
        reject(
          new HcpError('PROVIDER_UNAVAILABLE', "the VM's display on its host could not be reached", {
            reason: err.message,
          }),
        );
      };
      socket.once('error', fail);
      socket.setTimeout(Math.max(1000, ctx.deadline.getTime() - Date.now()), () =>
        fail(new Error('connect timed out')),
      );
      socket.once('connect', () => {
        socket.off('error', fail);
        socket.setTimeout(0);
        resolve(socket);
      });
    });
    return { protocol: 'rfb', stream, ...(endpoint.password ? { rfb_password: endpoint.password } : {}) };
  }

  async checkConnectivity(ctx: CallContext): Promise<void> {
    const [host] = await this.options.placements.onlineHosts(this.options.clusterId, this.options.heartbeatTimeoutMs);
    if (!host) throw new HcpError('PROVIDER_UNAVAILABLE', 'no host agent of this cluster is online');
    await this.call(host, { op: 'check' }, ctx);
  }

  private async hostOf(hcpId: string): Promise<string> {
    const placed = await this.options.placements.hostOf(hcpId);
    if (!placed) throw new HcpError('NOT_FOUND', 'the VM is on no host of this cluster');
    return placed.host_id;
  }

  /** HCP's own placement names the provider, cluster and host, whatever the agent reported. */
  private described(hostId: string, vm: Value<'describe'> & object): VmDescription {
    return {
      ...vm,
      provider_ref: {
        ...vm.provider_ref,
        provider_id: this.options.providerId,
        cluster_id: this.options.clusterId,
        host_id: hostId,
      },
    };
  }

  /** Queues the call for the host and waits for its outcome, the deadline, or the caller's abort. */
  private async call<R extends HostCallRequest>(hostId: string, request: R, ctx: CallContext): Promise<Value<R['op']>> {
    const { calls, pollMs } = this.options;
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    const callId = await calls.submit(hostId, request, {
      deadline: ctx.deadline,
      ...(ctx.trace_id ? { trace_id: ctx.trace_id } : {}),
    });
    for (;;) {
      const state = await calls.status(callId);
      if (!state) throw new HcpError('PROVIDER_UNAVAILABLE', 'the host call was removed before it finished');
      if (state.status === 'succeeded' || state.status === 'failed') {
        if (state.outcome.status === 'failed') {
          const { code, message, details, retryable } = state.outcome.error;
          throw new HcpError(code, message, details, retryable);
        }
        const parsed = hostCallValueSchemas[request.op].safeParse(state.outcome.value);
        if (!parsed.success) {
          throw new HcpError(
            'PROVIDER_UNAVAILABLE',
            `the host agent answered a ${request.op} call with something HCP does not accept`,
            { issues: parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.')}: ${i.message}`) },
            false,
          );
        }
        return parsed.data as Value<R['op']>;
      }
      const left = ctx.deadline.getTime() - Date.now();
      if (ctx.signal.aborted || left <= 0) {
        await calls.withdraw(callId);
        if (ctx.signal.aborted) throw abortError(ctx.signal);
        throw state.claims === 0
          ? new HcpError('PROVIDER_UNAVAILABLE', "the host's agent did not take the call before its deadline", {
              host_id: hostId,
            })
          : new HcpError('PROVIDER_TIMEOUT', "the host's agent did not finish the call before its deadline", {
              host_id: hostId,
            });
      }
      await calls.waitForChange(`call:${callId}`, Math.min(pollMs, left), ctx.signal);
    }
  }
}

function abortError(signal: AbortSignal): HcpError {
  return signal.reason instanceof HcpError
    ? signal.reason
    : new HcpError('PROVIDER_TIMEOUT', 'the call was abandoned: its job is no longer held by this worker');
}
