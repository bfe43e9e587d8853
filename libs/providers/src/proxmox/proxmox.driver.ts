/**
 * The Proxmox VE driver: HCP's VM operations over the Proxmox REST API. This class holds the use
 * cases, one method each; their steps live by concern beside it: proxmox-vm-lookup.ts (finding a VM
 * by HCP id), proxmox-create.ts, proxmox-power.ts, proxmox-delete.ts, proxmox-describe.ts,
 * proxmox-list.ts (every HCP VM of the cluster), proxmox-console.ts, proxmox-tasks.ts (tasks, locks, deadlines), proxmox-translate.ts (HCP shapes
 * to Proxmox parameters and back) and proxmox-client.ts (HTTP, auth, TLS).
 */
import { parseTlsTrust, type TlsTrust } from '../common/https/tls-trust';
import { PerKeyQueue } from '../common/per-key-queue';
import { HcpError, conflict, notFound } from '@hcp/domain';
import type {
  CallContext,
  Capabilities,
  ConsoleType,
  CreateVmSpec,
  ProviderConsole,
  ProviderDriver,
  VmDescription,
} from '../spi/provider-driver';
import { ProxmoxClient, type ProxmoxClientOptions } from './proxmox-client';
import { DEFAULT_PROXMOX_TIMING, type ProxmoxCluster, type ProxmoxTiming } from './proxmox-cluster';
import {
  parseProxmoxCredentials,
  parseProxmoxEndpoint,
  parseProxmoxSettings,
  type ProxmoxCredentials,
  type ProxmoxSettings,
} from './proxmox-config';
import { openVncConsole } from './proxmox-console';
import { configureVm, findOrClone, resizeDisk, settleClones, startedCloneToDelete } from './proxmox-create';
import { destroyVm } from './proxmox-delete';
import { describeLocated, describeWithAddresses } from './proxmox-describe';
import { isVmMissing } from './proxmox-errors';
import { descriptionWithTags, proxmoxTagList, tagsOfDescription } from './proxmox-format';
import { listHcpVms } from './proxmox-list';
import { ensureRunning, gracefulStop, hardStop, rebootOrReset } from './proxmox-power';
import { badAnswer, checkSpec, powerOf } from './proxmox-translate';
import { ids, locateVm, readVmStatus, refuseWhileCreating, requireVm } from './proxmox-vm-lookup';

export interface ProxmoxDriverOptions {
  /** `https://host:8006`. */
  endpoint: string | URL;
  /** Raw credentials as stored for the provider (see parseProxmoxCredentials) or parsed ones. */
  credentials: ProxmoxCredentials | Record<string, unknown>;
  tls?: TlsTrust | Record<string, unknown>;
  /** Provider settings, then cluster placement hints: later layers win (see ProxmoxSettings). */
  settings?: Record<string, unknown> | Array<Record<string, unknown> | undefined>;
  provider_id?: string;
  cluster_id?: string;
  timing?: Partial<ProxmoxTiming>;
  client?: Partial<Omit<ProxmoxClientOptions, 'endpoint' | 'credentials' | 'tls'>>;
}

/**
 * What this driver does end to end through the SPI, nothing Proxmox could do but HCP cannot ask for:
 * no snapshots and no resize (the SPI has no such call; a create's disk sizing is not a resize).
 * provider_tags: updateTags writes the tenant's tags into the description (exactly) and the Proxmox tag
 * list (one token each), and the reconcile loop pushes a tag PATCH there. The capability test in test/integration/providers/proxmox-driver.test.ts exercises
 * each one declared.
 */
const CAPABILITIES: Readonly<Capabilities> = Object.freeze({
  // vnc and webconsole: vncproxy + vncwebsocket, relayed by HCP. No spice: HCP has no SPICE relay.
  console_types: ['vnc', 'webconsole'] as ConsoleType[],
  reboot: true,
  graceful_stop: true,
  snapshots: false,
  resize: false,
  guest_agent_addresses: true,
  provider_tags: true,
});

export class ProxmoxDriver implements ProviderDriver {
  readonly type = 'proxmox';
  readonly client: ProxmoxClient;
  readonly settings: ProxmoxSettings;
  private readonly cluster: ProxmoxCluster;
  /** Calls for one HCP id run one after another within this process. */
  /** Calls for one HCP id run one after another in this process. */
  private readonly perVm = new PerKeyQueue();

  constructor(options: ProxmoxDriverOptions) {
    const endpoint = parseProxmoxEndpoint(
      options.endpoint instanceof URL ? options.endpoint.toString() : options.endpoint,
    );
    const credentials = isParsedCredentials(options.credentials)
      ? options.credentials
      : parseProxmoxCredentials(options.credentials);
    const tls = parseTlsTrust(options.tls);
    const layers = Array.isArray(options.settings) ? options.settings : [options.settings];
    this.settings = parseProxmoxSettings(...layers);
    const timing = { ...DEFAULT_PROXMOX_TIMING, ...options.timing };
    this.client = new ProxmoxClient({ ...options.client, endpoint, credentials, tls });
    this.cluster = {
      client: this.client,
      settings: this.settings,
      timing,
      providerId: options.provider_id ?? '',
      clusterId: options.cluster_id ?? '',
      startedClones: new Map(),
    };
  }

  capabilities(): Capabilities {
    return { ...CAPABILITIES, console_types: [...CAPABILITIES.console_types] };
  }

  async close(): Promise<void> {
    this.client.close();
  }

  createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(spec.hcp_id, async () => {
      this.begin(ctx, 'create');
      checkSpec(spec);
      const settings = spec.placement_hints ? parseProxmoxSettings(this.settings, spec.placement_hints) : this.settings;
      const cluster = this.cluster;

      const loc = await findOrClone(cluster, spec, settings, ctx);
      loc.config = await configureVm(cluster, loc, spec, settings, ctx);
      settleClones(cluster, spec.hcp_id);
      await resizeDisk(cluster, loc, spec, settings, ctx);
      if (spec.power_on) {
        await ensureRunning(cluster, loc, ctx);
        return describeWithAddresses(cluster, spec.hcp_id, loc, settings, ctx);
      }
      return describeLocated(cluster, spec.hcp_id, loc, ctx);
    });
  }

  startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'start');
      const loc = await requireVm(this.cluster, hcpId, ctx);
      refuseWhileCreating(hcpId, loc);
      const wasRunning = (await readVmStatus(this.cluster, loc, ctx)).status === 'running';
      if (!wasRunning) await ensureRunning(this.cluster, loc, ctx);
      return wasRunning
        ? describeLocated(this.cluster, hcpId, loc, ctx)
        : describeWithAddresses(this.cluster, hcpId, loc, this.settings, ctx);
    });
  }

  stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'stop');
      const loc = await requireVm(this.cluster, hcpId, ctx);
      refuseWhileCreating(hcpId, loc);
      const st = await readVmStatus(this.cluster, loc, ctx);
      if (st.status !== 'stopped') {
        if (force || this.settings.shutdown_timeout_s === 0) await hardStop(this.cluster, loc, ctx);
        else await gracefulStop(this.cluster, loc, ctx);
      }
      return describeLocated(this.cluster, hcpId, loc, ctx);
    });
  }

  rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'reboot');
      const loc = await requireVm(this.cluster, hcpId, ctx);
      refuseWhileCreating(hcpId, loc);
      const st = await readVmStatus(this.cluster, loc, ctx);
      if (st.status !== 'running') throw conflict(`VM ${hcpId} is not running`, { power_state: powerOf(st) });
      await rebootOrReset(this.cluster, hcpId, loc, force, ctx);
      return describeLocated(this.cluster, hcpId, loc, ctx);
    });
  }

  deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'delete');
      const loc = (await locateVm(this.cluster, hcpId, ctx)) ?? (await startedCloneToDelete(this.cluster, hcpId, ctx));
      if (!loc) return;
      await destroyVm(this.cluster, loc, ctx);
      settleClones(this.cluster, hcpId);
    });
  }

  describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'describe');
      const loc = await locateVm(this.cluster, hcpId, ctx);
      if (!loc) return null;
      try {
        return await describeLocated(this.cluster, hcpId, loc, ctx);
      } catch (err) {
        // Deleted between the lookup and the status read.
        if (isVmMissing(err)) return null;
        throw err;
      }
    });
  }

  listVms(ctx: CallContext): Promise<VmDescription[]> {
    this.begin(ctx, 'list');
    return listHcpVms(this.cluster, ctx);
  }

  /**
   * The tenant's tags into the description (exact, for HCP to read back) and the Proxmox tag list (one
   * token each, for people in the Proxmox UI); `hcp`, `hcp-id-<id>` and tags others set are kept.
   */
  updateTags(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void> {
    return this.perVm.run(hcpId, async () => {
      this.begin(ctx, 'tags');
      const loc = await requireVm(this.cluster, hcpId, ctx);
      refuseWhileCreating(hcpId, loc);
      const description = descriptionWithTags(loc.config.description, tags);
      if (description === undefined) throw notFound(`VM ${hcpId}`);
      const previous = tagsOfDescription(loc.config.description) ?? {};
      const tagList = proxmoxTagList(hcpId, tags, loc.config.tags, previous);
      const params: Record<string, string> = {};
      if (description !== loc.config.description) params.description = description;
      if (tagList !== loc.config.tags) params.tags = tagList;
      if (Object.keys(params).length === 0) return;
      await this.client.put('/nodes/{node}/qemu/{vmid}/config', ids(loc), ctx, { params, idempotent: true });
    });
  }

  /**
   * Reaches the API with the configured endpoint, TLS trust and credentials (a ticket login when
   * configured with a password), and checks that the cluster's nodes exist.
   */
  async checkConnectivity(ctx: CallContext): Promise<void> {
    this.begin(ctx, 'connectivity');
    const version = await this.client.get<{ version?: unknown }>('/version', {}, ctx);
    if (!version || typeof version.version !== 'string') throw badAnswer('version');
    if (this.settings.nodes) {
      const nodes = (await this.client.get<Array<{ node?: string }>>('/nodes', {}, ctx)) ?? [];
      const known = new Set(nodes.map((n) => n.node));
      const missing = this.settings.nodes.filter((n) => !known.has(n));
      if (missing.length > 0) {
        throw new HcpError('INVALID_REQUEST', `the Proxmox cluster has no node named ${missing.join(', ')}`, {
          fields: [{ field: 'settings.nodes', problems: [`unknown nodes: ${missing.join(', ')}`] }],
        });
      }
    }
  }

  async openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    this.begin(ctx, 'console');
    if (!CAPABILITIES.console_types.includes(type)) {
      throw new HcpError('FEATURE_NOT_SUPPORTED', `the provider offers no ${type} console`, {
        capability: 'console',
        console_type: type,
      });
    }
    return openVncConsole(this.cluster, hcpId, ctx);
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

function isParsedCredentials(value: unknown): value is ProxmoxCredentials {
  const kind = (value as { kind?: unknown })?.kind;
  return kind === 'token' || kind === 'password';
}
