/**
 * The vSphere driver: HCP's VM operations over vCenter's SOAP API (vim25), through a small typed
 * layer of its own (soap-envelope.ts, vsphere-http.ts, vsphere-client.ts: session, retries, faults).
 * This class holds the use cases; their steps live beside it by concern: vsphere-vm.ts (finding a
 * VM by HCP id), vsphere-create.ts, vsphere-power.ts, vsphere-tasks.ts, vsphere-tags.ts.
 */
import { parseTlsTrust, type TlsTrust } from '../common/https/tls-trust';
import { PerKeyQueue } from '../common/per-key-queue';
import { HcpError } from '@hcp/domain';
import type {
  CallContext,
  Capabilities,
  ConsoleType,
  CreateVmSpec,
  ProviderConsole,
  ProviderDriver,
  VmDescription,
} from '../spi/provider-driver';
import { VsphereClient, type VsphereClientOptions, type VsphereCredentials } from './vsphere-client';
import { DEFAULT_VSPHERE_TIMING, type VsphereCluster, type VsphereTiming } from './vsphere-cluster';
import {
  parseVsphereCredentials,
  parseVsphereEndpoint,
  parseVsphereSettings,
  type VsphereSettings,
} from './vsphere-config';
import { checkPlacement, findOrClone } from './vsphere-create';
import { faultType } from './vsphere-faults';
import { allVms } from './vsphere-inventory';
import { ensureRunning, gracefulStop, hardStop, rebootOrReset } from './vsphere-power';
import { writeExtraConfig } from './vsphere-extra-config';
import { tagOptions } from './vsphere-tags';
import { runTask } from './vsphere-tasks';
import { HCP_ID_KEY, describe, findVm, findVmToDelete, reread, requireVm } from './vsphere-vm';

export interface VsphereDriverOptions {
  /** `https://vcenter.example.org/sdk`. */
  endpoint: string | URL;
  credentials: VsphereCredentials | Record<string, unknown>;
  tls?: TlsTrust | Record<string, unknown>;
  /** Provider settings, then cluster placement hints: later layers win (see VsphereSettings). */
  settings?: Record<string, unknown> | Array<Record<string, unknown> | undefined>;
  provider_id?: string;
  cluster_id?: string;
  timing?: Partial<VsphereTiming>;
  client?: Partial<Omit<VsphereClientOptions, 'endpoint' | 'credentials' | 'tls'>>;
}

/**
 * What this driver does end to end. No console: vcsim serves no WebMKS/VNC endpoint to prove one
 * against, and HCP relays RFB only. No snapshots or resize (the SPI has no such call). Guest
 * addresses come from VMware Tools (guest.net); tags live in extraConfig (`hcp.tag.*`).
 */
const CAPABILITIES: Readonly<Capabilities> = Object.freeze({
  console_types: [] as ConsoleType[],
  reboot: true,
  graceful_stop: true,
  snapshots: false,
  resize: false,
  guest_agent_addresses: true,
  provider_tags: true,
});

export class VsphereDriver implements ProviderDriver {
  readonly type = 'vsphere';
  readonly client: VsphereClient;
  readonly settings: VsphereSettings;
  private readonly cluster: VsphereCluster;
  /** Calls for one HCP id run one after another in this process. */
  private readonly perVm = new PerKeyQueue();

  constructor(options: VsphereDriverOptions) {
    const endpoint = parseVsphereEndpoint(
      options.endpoint instanceof URL ? options.endpoint.toString() : options.endpoint,
    );
    const credentials = parseVsphereCredentials(options.credentials);
    const tls = parseTlsTrust(options.tls);
    const layers = Array.isArray(options.settings) ? options.settings : [options.settings];
    this.settings = parseVsphereSettings(...layers);
    this.client = new VsphereClient({ ...options.client, endpoint, credentials, tls });
    this.cluster = {
      client: this.client,
      settings: this.settings,
      timing: { ...DEFAULT_VSPHERE_TIMING, ...options.timing },
      providerId: options.provider_id ?? '',
      clusterId: options.cluster_id ?? '',
    };
  }

  capabilities(): Capabilities {
    return { ...CAPABILITIES, console_types: [...CAPABILITIES.console_types] };
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(spec.hcp_id, async () => {
      this.begin(ctx, 'create');
      const settings = spec.placement_hints ? parseVsphereSettings(this.settings, spec.placement_hints) : this.settings;
      let vm = await findOrClone(this.cluster, spec, settings, ctx);
      if (spec.power_on) {
        await ensureRunning(this.cluster, vm, ctx);
        vm = await reread(this.cluster, vm, ctx);
      }
      return describe(this.cluster, spec.hcp_id, vm);
    });
  }

  startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'start');
      const vm = await requireVm(this.cluster, hcpId, ctx);
      if (vm.power === 'poweredOn') return describe(this.cluster, hcpId, vm);
      await ensureRunning(this.cluster, vm, ctx);
      return describe(this.cluster, hcpId, await reread(this.cluster, vm, ctx));
    });
  }

  stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'stop');
      const vm = await requireVm(this.cluster, hcpId, ctx);
      if (vm.power === 'poweredOff') return describe(this.cluster, hcpId, vm);
      if (force || this.settings.shutdown_timeout_s === 0) await hardStop(this.cluster, vm, ctx);
      else await gracefulStop(this.cluster, vm, ctx);
      return describe(this.cluster, hcpId, await reread(this.cluster, vm, ctx));
    });
  }

  rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'reboot');
      const vm = await requireVm(this.cluster, hcpId, ctx);
      await rebootOrReset(this.cluster, hcpId, vm, force, ctx);
      return describe(this.cluster, hcpId, await reread(this.cluster, vm, ctx));
    });
  }

  deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'delete');
      const vm = await findVmToDelete(this.cluster, hcpId, ctx);
      if (!vm) return;
      try {
        await hardStop(this.cluster, vm, ctx);
        await runTask(this.client, 'Destroy_Task', vm.ref, {}, this.cluster.timing, ctx);
      } catch (err) {
        // Deleted meanwhile, by an earlier attempt whose answer was lost or by someone else.
        if (faultType(err) === 'ManagedObjectNotFound' || (err as HcpError).code === 'NOT_FOUND') return;
        throw err;
      }
    });
  }

  describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'describe');
      const vm = await findVm(this.cluster, hcpId, ctx);
      return vm ? describe(this.cluster, hcpId, vm) : null;
    });
  }

  /** Every VM carrying an HCP id that this cluster made (`hcp.cluster_id`), in one pass over vCenter. */
  async listVms(ctx: CallContext): Promise<VmDescription[]> {
    this.begin(ctx, 'list');
    const vms = await allVms(this.client, ctx);
    return vms
      .filter(
        (vm) => !vm.template && vm.extra[HCP_ID_KEY] && (vm.extra['hcp.cluster_id'] ?? '') === this.cluster.clusterId,
      )
      .map((vm) => describe(this.cluster, vm.extra[HCP_ID_KEY] as string, vm));
  }

  /** The tenant's tags into extraConfig (`hcp.tag.*`) with one ReconfigVM_Task; nothing when they are there already. */
  updateTags(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'tags');
      const vm = await requireVm(this.cluster, hcpId, ctx);
      const changes = tagOptions(vm.extra, tags);
      await writeExtraConfig(this.client, vm.ref.value, changes, ctx, this.cluster.timing);
    });
  }

  /**
   * Logs in with the configured endpoint, TLS trust and credentials, reads vCenter's clock, and checks
   * that the datacenter, folder, pool or cluster and datastore of the settings exist.
   */
  async checkConnectivity(ctx: CallContext): Promise<void> {
    this.begin(ctx, 'connectivity');
    await this.client.currentTime(ctx);
    await checkPlacement(this.cluster, this.settings, ctx);
  }

  async openConsole(_hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    this.begin(ctx, 'console');
    throw new HcpError('FEATURE_NOT_SUPPORTED', `the provider offers no ${type} console`, {
      capability: 'console',
      console_type: type,
    });
  }

  private begin(ctx: CallContext, operation: string): void {
    if (ctx.signal.aborted) {
      throw new HcpError('PROVIDER_TIMEOUT', `the provider ${operation} was aborted`, {
        step: operation,
        reason: 'aborted',
      });
    }
    if (Date.now() >= ctx.deadline.getTime()) {
      throw new HcpError('PROVIDER_TIMEOUT', `the provider ${operation} did not finish before the deadline`, {
        step: operation,
        reason: 'deadline',
      });
    }
  }
}
