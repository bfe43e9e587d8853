/**
 * The libvirt driver: HCP's VM operations on one KVM/QEMU host through `virsh`. It runs inside the
 * host agent (next to libvirtd), which also asks it for console endpoints and the host's capacity.
 * The steps live beside it: libvirt-domain.ts (finding and describing a VM by HCP id),
 * libvirt-create.ts, libvirt-power.ts, libvirt-console.ts, libvirt-host.ts, domain-xml.ts, virsh.ts.
 */
import { PerKeyQueue } from '../common/per-key-queue';
import { HcpError, notFound } from '@hcp/domain';
import type { ConsoleEndpoint, HostCapacity } from '@hcp/host-protocol';
import type {
  CallContext,
  Capabilities,
  ConsoleType,
  CreateVmSpec,
  ProviderConsole,
  ProviderDriver,
  VmDescription,
} from '../spi/provider-driver';
import { metadataElement, HCP_XML_KEY, HCP_XMLNS, parseDomainXml } from './domain-xml';
import { checkSpec, deleteVolume, ensureDomain } from './libvirt-create';
import { connectConsole, consoleEndpoint } from './libvirt-console';
import {
  describeDomain,
  domainName,
  domainState,
  isHcpId,
  readDomain,
  requireDomain,
  type LibvirtHost,
} from './libvirt-domain';
import { isDomainMissing, isNotRunning } from './libvirt-errors';
import { hostCapacityOf } from './libvirt-host';
import { destroy, reboot, start, stop } from './libvirt-power';
import { checkCall, virsh } from './virsh';

export interface LibvirtDriverOptions {
  /** libvirt connection URI (default `qemu:///system`). */
  uri?: string;
  /** Storage pool holding the base images and the VMs' disks (default `hcp`). */
  pool?: string;
  /** A libvirt network for the VMs' NICs; absent: user-mode networking (no addresses reported). */
  network?: string;
  /** Where QEMU's VNC servers listen (default 127.0.0.1: only this host's agent reaches them). */
  vnc_listen?: string;
  /** How long a graceful stop waits for the guest before powering it off (default 60 s; never past the deadline). */
  shutdown_timeout_ms?: number;
  provider_id: string;
  cluster_id: string;
  /** The virsh binary (default `virsh` on PATH). */
  virsh_path?: string;
}

/**
 * What this driver really does: a VNC console (QEMU's server, relayed by HCP), ACPI reboot and stop
 * with a forced fallback, tags in the domain metadata. No snapshots, no resize (the SPI has no such
 * calls), no guest agent: addresses come from the libvirt network's DHCP leases.
 */
export const CAPABILITIES: Readonly<Capabilities> = Object.freeze({
  console_types: ['vnc'] as ConsoleType[],
  reboot: true,
  graceful_stop: true,
  snapshots: false,
  resize: false,
  guest_agent_addresses: false,
  provider_tags: true,
});

export class LibvirtDriver implements ProviderDriver {
  readonly type = 'libvirt';
  private readonly host: LibvirtHost;
  /** Calls for one HCP id run one after another within this process (the agent is one per host). */
  /** Calls for one HCP id run one after another in this process. */
  private readonly perVm = new PerKeyQueue();

  constructor(options: LibvirtDriverOptions) {
    this.host = {
      virsh: { uri: options.uri ?? 'qemu:///system', virshPath: options.virsh_path ?? 'virsh' },
      pool: options.pool ?? 'hcp',
      network: options.network || undefined,
      vnc_listen: options.vnc_listen ?? '127.0.0.1',
      shutdown_timeout_ms: options.shutdown_timeout_ms ?? 60_000,
      provider_id: options.provider_id,
      cluster_id: options.cluster_id,
    };
  }

  capabilities(): Capabilities {
    return { ...CAPABILITIES, console_types: [...CAPABILITIES.console_types] };
  }

  createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(spec.hcp_id, async () => {
      checkCall(ctx, 'create');
      checkSpec(spec);
      const domain = await ensureDomain(this.host, spec, ctx);
      if (spec.power_on) await start(this.host, domain.name, ctx);
      return describeDomain(this.host, domain, ctx);
    });
  }

  startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      checkCall(ctx, 'start');
      const domain = await requireDomain(this.host, hcpId, ctx);
      await this.gone(() => start(this.host, domain.name, ctx));
      return describeDomain(this.host, domain, ctx);
    });
  }

  stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      checkCall(ctx, 'stop');
      const domain = await requireDomain(this.host, hcpId, ctx);
      await this.gone(() => stop(this.host, domain.name, force, ctx));
      return describeDomain(this.host, domain, ctx);
    });
  }

  rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      checkCall(ctx, 'reboot');
      const domain = await requireDomain(this.host, hcpId, ctx);
      await this.gone(() => reboot(this.host, domain.name, force, ctx));
      return describeDomain(this.host, domain, ctx);
    });
  }

  deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    return this.perVm.run(hcpId, async () => {
      checkCall(ctx, 'delete');
      if (!isHcpId(hcpId)) return;
      const domain = await readDomain(this.host, hcpId, ctx);
      if (domain) {
        await destroy(this.host, domain.name, ctx).catch((err) => {
          if (!isDomainMissing(err)) throw err;
        });
        try {
          // Only the VM's own overlay is in its domain XML: the base image it backs onto stays.
          await virsh(this.host.virsh, ['undefine', domain.name, '--nvram', '--remove-all-storage'], ctx);
        } catch (err) {
          if (!isDomainMissing(err)) throw err;
        }
      }
      // A half-made VM (its disk made, its domain not yet) leaves the volume alone: delete it too.
      await deleteVolume(this.host, hcpId, ctx);
    });
  }

  describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    return this.perVm.run(hcpId, async () => {
      checkCall(ctx, 'describe');
      const domain = await readDomain(this.host, hcpId, ctx);
      if (!domain) return null;
      try {
        return await describeDomain(this.host, domain, ctx);
      } catch (err) {
        if (isDomainMissing(err)) return null;
        throw err;
      }
    });
  }

  async listVms(ctx: CallContext): Promise<VmDescription[]> {
    checkCall(ctx, 'list');
    const names = (await virsh(this.host.virsh, ['list', '--all', '--name'], ctx))
      .split('\n')
      .map((n) => n.trim())
      .filter((n) => n.startsWith('hcp-'));
    const out: VmDescription[] = [];
    // One domain at a time: a host holds tens of VMs, and the agent shares its CPUs with them.
    for (const name of names) {
      try {
        const parsed = parseDomainXml(await virsh(this.host.virsh, ['dumpxml', name], ctx));
        if (parsed.metadata && domainName(parsed.metadata.hcp_id) === name)
          out.push(await describeDomain(this.host, parsed, ctx));
      } catch (err) {
        // Deleted while being listed: not a VM of this host any more.
        if (!isDomainMissing(err)) throw err;
      }
    }
    return out;
  }

  updateTags(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void> {
    return this.perVm.run(hcpId, async () => {
      checkCall(ctx, 'update_tags');
      const domain = await requireDomain(this.host, hcpId, ctx);
      const meta = { ...domain.metadata!, tags: { ...tags } };
      const args = ['metadata', domain.name, '--uri', HCP_XMLNS, '--key', HCP_XML_KEY, '--set', metadataElement(meta)];
      await this.gone(() => virsh(this.host.virsh, [...args, '--config'], ctx));
      if ((await domainState(this.host, domain.name, ctx)).power === 'stopped') return;
      // The running domain's copy too: describe reads the live XML.
      await virsh(this.host.virsh, [...args, '--live'], ctx).catch((err) => {
        if (!isNotRunning(err)) throw err;
      });
    });
  }

  async consoleEndpoint(hcpId: string, ctx: CallContext): Promise<ConsoleEndpoint> {
    checkCall(ctx, 'console');
    const domain = await requireDomain(this.host, hcpId, ctx);
    return this.gone(() => consoleEndpoint(this.host, domain.name, ctx));
  }

  async openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    checkCall(ctx, 'console');
    if (type !== 'vnc') throw new HcpError('FEATURE_NOT_SUPPORTED', `console type ${type} is not supported`);
    return connectConsole(await this.consoleEndpoint(hcpId, ctx), ctx);
  }

  async hostCapacity(ctx: CallContext): Promise<HostCapacity> {
    checkCall(ctx, 'capacity');
    const [nodeinfo, memstats, poolInfo] = await Promise.all([
      virsh(this.host.virsh, ['nodeinfo'], ctx),
      virsh(this.host.virsh, ['nodememstats'], ctx),
      virsh(this.host.virsh, ['pool-info', '--bytes', this.host.pool], ctx).catch((err) => {
        if (err instanceof HcpError && err.code === 'PROVIDER_TIMEOUT') throw err;
        return null;
      }),
    ]);
    return hostCapacityOf(nodeinfo, memstats, poolInfo);
  }

  async checkConnectivity(ctx: CallContext): Promise<void> {
    checkCall(ctx, 'check');
    await virsh(this.host.virsh, ['version'], ctx);
    // The pool is where every VM's disk goes: a host without it cannot create anything.
    const info = await virsh(this.host.virsh, ['pool-info', this.host.pool], ctx);
    if (!/State:\s+running/.test(info))
      throw new HcpError('PROVIDER_UNAVAILABLE', 'the host storage pool is not active');
  }

  async close(): Promise<void> {}

  /** A domain that vanished mid-call (deleted by someone else) is NOT_FOUND, whatever step noticed. */
  private async gone<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      if (isDomainMissing(err)) throw notFound('VM');
      throw err;
    }
  }
}
