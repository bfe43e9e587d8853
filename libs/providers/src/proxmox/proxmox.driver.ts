/**
 * The Proxmox VE driver: HCP's VM operations over the Proxmox REST API.
 *
 * Identity: a VM carries its HCP id three ways. The description holds `hcp-id: <id>` (authoritative),
 * the tags hold `hcp` and `hcp-id-<id>` (visible in `/cluster/resources`, so a lookup costs one list
 * and one config read), and between clone and configure the VM is named `hcp-<id>` (the clone call
 * cannot set tags, but it sets the name and description), so a create interrupted at any point is
 * found again instead of cloned twice.
 *
 * Every long operation returns a task (UPID) that is followed until it stops and whose exit status
 * is read. Lock contention ("VM is locked", "can't lock file ... got timeout") is retried with backoff
 * until the call's deadline; a VMID taken between `nextid` and `clone` is retried with a new id.
 */
import { HcpError, conflict, notFound } from '@hcp/domain';
import type {
  CallContext,
  Capabilities,
  ConsoleType,
  CreateVmSpec,
  PowerState,
  ProviderConsole,
  ProviderDriver,
  VmAddress,
  VmDescription,
} from '../spi/provider-driver';
import { ProxmoxClient, type ProxmoxClientOptions } from './proxmox-client';
import {
  parseProxmoxCredentials,
  parseProxmoxEndpoint,
  parseProxmoxSettings,
  parseProxmoxTls,
  type ProxmoxCredentials,
  type ProxmoxSettings,
  type ProxmoxTls,
} from './proxmox-config';
import { ProxmoxApiError, ProxmoxTaskError, isLockError, isVmMissing, isVmidTaken, messageMatches } from './proxmox-errors';
import {
  HCP_TAG,
  agentEnabled,
  bootDiskOf,
  buildDescription,
  cloneMarkerName,
  diskSizeOf,
  dnsName,
  encodeSshKeys,
  hcpIdOfDescription,
  hcpIdTag,
  macOf,
  memoryMiB,
  netOnBridge,
  parseTags,
  parseUpid,
} from './proxmox-format';

export interface ProxmoxTiming {
  /** First and longest interval between task status polls. */
  taskPollMinMs: number;
  taskPollMaxMs: number;
  /** First and longest wait between tries of an operation refused by a lock. */
  lockRetryBaseMs: number;
  lockRetryMaxMs: number;
  /** Tries of clone when its VMID keeps being taken. */
  vmidAttempts: number;
  /** Kept free before the deadline when sizing a graceful shutdown, so the hard stop still fits. */
  stopMarginMs: number;
  /** Timeout of a guest agent call (the agent itself waits up to ~8 s). */
  agentTimeoutMs: number;
  /** Interval of the guest agent polls while create and start wait for an address (settings.address_wait_s). */
  addressPollMs: number;
}

export const DEFAULT_PROXMOX_TIMING: Readonly<ProxmoxTiming> = Object.freeze({
  taskPollMinMs: 200,
  taskPollMaxMs: 2000,
  lockRetryBaseMs: 1000,
  lockRetryMaxMs: 10_000,
  vmidAttempts: 5,
  stopMarginMs: 5000,
  agentTimeoutMs: 10_000,
  addressPollMs: 1000,
});

export interface ProxmoxDriverOptions {
  /** `https://host:8006`. */
  endpoint: string | URL;
  /** Raw credentials as stored for the provider (see parseProxmoxCredentials) or parsed ones. */
  credentials: ProxmoxCredentials | Record<string, unknown>;
  tls?: ProxmoxTls | Record<string, unknown>;
  /** Provider settings, then cluster placement hints: later layers win (see ProxmoxSettings). */
  settings?: Record<string, unknown> | Array<Record<string, unknown> | undefined>;
  provider_id?: string;
  cluster_id?: string;
  timing?: Partial<ProxmoxTiming>;
  client?: Partial<Omit<ProxmoxClientOptions, 'endpoint' | 'credentials' | 'tls'>>;
}

const CAPABILITIES: Readonly<Capabilities> = Object.freeze({
  // vnc and webconsole: vncproxy + vncwebsocket, relayed by HCP. No spice: HCP has no SPICE relay.
  console_types: ['vnc', 'webconsole'] as ConsoleType[],
  reboot: true,
  graceful_stop: true,
  snapshots: true,
  resize: true,
  guest_agent_addresses: true,
  provider_tags: true,
});

/** A row of `/cluster/resources`. */
interface ClusterResource {
  id: string;
  type: string;
  node?: string;
  vmid?: number;
  name?: string;
  status?: string;
  template?: number | boolean;
  tags?: string;
  lock?: string;
  maxmem?: number;
  mem?: number;
  storage?: string;
  shared?: number | boolean;
  content?: string;
}

type VmConfig = Record<string, unknown>;

interface Located {
  node: string;
  vmid: number;
  config: VmConfig;
}

interface VmStatus {
  status: string;
  qmpstatus?: string;
  lock?: string;
  agent?: number | boolean;
}

const GiB = 1024 ** 3;
const isTemplate = (r: ClusterResource) => r.template === 1 || r.template === true;
const truthy = (v: unknown) => v === 1 || v === true || v === '1';

export class ProxmoxDriver implements ProviderDriver {
  readonly type = 'proxmox';
  readonly client: ProxmoxClient;
  readonly settings: ProxmoxSettings;
  private readonly timing: ProxmoxTiming;
  private readonly providerId: string;
  private readonly clusterId: string;
  /** Calls for one HCP id run one after another within this process. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(options: ProxmoxDriverOptions) {
    const endpoint = parseProxmoxEndpoint(options.endpoint instanceof URL ? options.endpoint.toString() : options.endpoint);
    const credentials = isParsedCredentials(options.credentials) ? options.credentials : parseProxmoxCredentials(options.credentials);
    const tls = parseProxmoxTls(options.tls);
    const layers = Array.isArray(options.settings) ? options.settings : [options.settings];
    this.settings = parseProxmoxSettings(...layers);
    this.timing = { ...DEFAULT_PROXMOX_TIMING, ...options.timing };
    this.providerId = options.provider_id ?? '';
    this.clusterId = options.cluster_id ?? '';
    this.client = new ProxmoxClient({ ...options.client, endpoint, credentials, tls });
  }

  capabilities(): Capabilities {
    return { ...CAPABILITIES, console_types: [...CAPABILITIES.console_types] };
  }

  async close(): Promise<void> {
    this.client.close();
  }

  // ---------------------------------------------------------------------------------------------
  // SPI operations

  createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    return this.serial(spec.hcp_id, async () => {
      this.begin(ctx, 'create');
      checkSpec(spec);
      const settings = spec.placement_hints ? parseProxmoxSettings(this.settings, spec.placement_hints) : this.settings;

      let loc = (await this.locate(spec.hcp_id, ctx)) ?? (await this.cloneFromTemplate(spec, settings, ctx));
      loc = await this.waitUntilUnlocked(loc, spec.hcp_id, ctx);
      loc.config = await this.configure(loc, spec, settings, ctx);
      await this.resizeDisk(loc, spec, settings, ctx);
      if (spec.power_on) {
        await this.ensureRunning(loc, ctx);
        return this.describeWithAddresses(spec.hcp_id, loc, settings, ctx);
      }
      return this.describeLocated(spec.hcp_id, loc, ctx);
    });
  }

  startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    return this.serial(hcpId, async () => {
      this.begin(ctx, 'start');
      const loc = await this.requireVm(hcpId, ctx);
      this.refuseWhileCreating(hcpId, loc);
      const wasRunning = (await this.status(loc, ctx)).status === 'running';
      if (!wasRunning) await this.ensureRunning(loc, ctx);
      return wasRunning ? this.describeLocated(hcpId, loc, ctx) : this.describeWithAddresses(hcpId, loc, this.settings, ctx);
    });
  }

  stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.serial(hcpId, async () => {
      this.begin(ctx, 'stop');
      const loc = await this.requireVm(hcpId, ctx);
      this.refuseWhileCreating(hcpId, loc);
      const st = await this.status(loc, ctx);
      if (st.status !== 'stopped') {
        if (force || this.settings.shutdown_timeout_s === 0) await this.hardStop(loc, ctx);
        else await this.gracefulStop(loc, ctx);
      }
      return this.describeLocated(hcpId, loc, ctx);
    });
  }

  rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    return this.serial(hcpId, async () => {
      this.begin(ctx, 'reboot');
      const loc = await this.requireVm(hcpId, ctx);
      this.refuseWhileCreating(hcpId, loc);
      const st = await this.status(loc, ctx);
      if (st.status !== 'running') throw conflict(`VM ${hcpId} is not running`, { power_state: powerOf(st) });
      await this.withLockRetry(ctx, 'reboot', async () => {
        try {
          const upid = force
            ? await this.client.post('/nodes/{node}/qemu/{vmid}/status/reset', ids(loc), ctx)
            : await this.client.post('/nodes/{node}/qemu/{vmid}/status/reboot', ids(loc), ctx, {
                params: { timeout: this.shutdownTimeoutS(ctx) },
              });
          await this.waitTask(upid, loc.node, ctx);
        } catch (err) {
          if (messageMatches(err, /not running/i)) throw conflict(`VM ${hcpId} is not running`, { power_state: 'stopped' });
          throw err;
        }
      });
      return this.describeLocated(hcpId, loc, ctx);
    });
  }

  deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    return this.serial(hcpId, async () => {
      this.begin(ctx, 'delete');
      const loc = await this.locate(hcpId, ctx);
      if (!loc) return;
      await this.withLockRetry(ctx, 'delete', async () => {
        try {
          const st = await this.status(loc, ctx);
          if (st.status === 'running') await this.hardStop(loc, ctx);
          const upid = await this.client.delete('/nodes/{node}/qemu/{vmid}', ids(loc), ctx, {
            params: { purge: true, 'destroy-unreferenced-disks': true },
          });
          await this.waitTask(upid, loc.node, ctx);
        } catch (err) {
          if (isVmMissing(err)) return;
          throw err;
        }
      });
    });
  }

  describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    return this.serial(hcpId, async () => {
      this.begin(ctx, 'describe');
      const loc = await this.locate(hcpId, ctx);
      if (!loc) return null;
      try {
        return await this.describeLocated(hcpId, loc, ctx);
      } catch (err) {
        // Deleted between the lookup and the status read.
        if (isVmMissing(err)) return null;
        throw err;
      }
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

  /**
   * vncproxy (a ticket, a port and a worker that waits 10 s for us), then at once the vncwebsocket
   * upgrade as the same identity. The RFB server behind it asks for VNC authentication with the
   * ticket as password; the ticket goes into the returned console and nowhere else.
   */
  async openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    this.begin(ctx, 'console');
    if (!CAPABILITIES.console_types.includes(type)) {
      throw new HcpError('FEATURE_NOT_SUPPORTED', `the provider offers no ${type} console`, { capability: 'console', console_type: type });
    }
    const loc = await this.requireVm(hcpId, ctx);
    const st = await this.status(loc, ctx);
    if (st.status !== 'running') throw conflict(`VM ${hcpId} is not running`, { power_state: powerOf(st) });
    let data: Record<string, unknown> | null;
    try {
      data = await this.client.post<Record<string, unknown>>('/nodes/{node}/qemu/{vmid}/vncproxy', ids(loc), ctx, {
        params: { websocket: true },
      });
    } catch (err) {
      // Stopped between the status read and the call.
      if (messageMatches(err, /not running/i)) throw conflict(`VM ${hcpId} is not running`, { power_state: 'stopped' });
      throw err;
    }
    const port = Number(data?.port);
    if (!data || typeof data.ticket !== 'string' || !Number.isInteger(port)) throw badAnswer('vncproxy');
    const ticket = data.ticket;
    const stream = await this.client.openWebSocket('/nodes/{node}/qemu/{vmid}/vncwebsocket', ids(loc), { port, vncticket: ticket }, ctx, {
      secrets: [ticket],
    });
    return { protocol: 'rfb', stream, rfb_password: ticket };
  }

  // ---------------------------------------------------------------------------------------------
  // Finding VMs

  /** The VM with this HCP id, or null. */
  private async locate(hcpId: string, ctx: CallContext): Promise<Located | null> {
    const vms = await this.client.get<ClusterResource[]>('/cluster/resources', {}, ctx, { type: 'vm' });
    const tag = hcpIdTag(hcpId);
    const marker = cloneMarkerName(hcpId);
    const candidates = (vms ?? [])
      .filter((r) => r.type === 'qemu' && !isTemplate(r) && typeof r.vmid === 'number' && typeof r.node === 'string')
      .filter((r) => parseTags(r.tags).includes(tag) || r.name === marker)
      .sort((a, b) => (a.vmid ?? 0) - (b.vmid ?? 0));
    for (const candidate of candidates) {
      const loc = { node: candidate.node!, vmid: candidate.vmid! };
      let config: VmConfig;
      try {
        config = await this.readConfig(loc, ctx);
      } catch (err) {
        if (isVmMissing(err)) continue;
        throw err;
      }
      if (hcpIdOfDescription(config.description) === hcpId) return { ...loc, config };
    }
    return null;
  }

  private async requireVm(hcpId: string, ctx: CallContext): Promise<Located> {
    const loc = await this.locate(hcpId, ctx);
    if (!loc) throw notFound(`VM ${hcpId}`);
    return loc;
  }

  private refuseWhileCreating(hcpId: string, loc: Located): void {
    const lock = loc.config.lock;
    if (lock === 'clone' || lock === 'create' || loc.config.name === cloneMarkerName(hcpId)) {
      // The create that owns it will finish (or its retry will), so this is worth retrying.
      throw new HcpError('CONFLICT', `VM ${hcpId} is still being created`, { phase: 'creating' }, true);
    }
  }

  private readConfig(loc: { node: string; vmid: number }, ctx: CallContext): Promise<VmConfig> {
    return this.client.get<VmConfig>('/nodes/{node}/qemu/{vmid}/config', ids(loc), ctx).then((c) => c ?? {});
  }

  private async status(loc: { node: string; vmid: number }, ctx: CallContext): Promise<VmStatus> {
    const st = await this.client.get<VmStatus>('/nodes/{node}/qemu/{vmid}/status/current', ids(loc), ctx);
    if (!st || typeof st.status !== 'string') throw badAnswer('status/current');
    return st;
  }

  // ---------------------------------------------------------------------------------------------
  // Create steps

  private async cloneFromTemplate(spec: CreateVmSpec, settings: ProxmoxSettings, ctx: CallContext): Promise<Located> {
    for (let attempt = 1; ; attempt++) {
      const resources = (await this.client.get<ClusterResource[]>('/cluster/resources', {}, ctx)) ?? [];
      const plan = planClone(resources, spec.image_ref, settings);
      const newid = Number(await this.client.get<number | string>('/cluster/nextid', {}, ctx));
      if (!Number.isInteger(newid) || newid < 100) throw badAnswer('cluster/nextid');
      try {
        await this.withLockRetry(ctx, 'clone', async () => {
          const upid = await this.client.post('/nodes/{node}/qemu/{vmid}/clone', { node: plan.templateNode, vmid: plan.templateVmid }, ctx, {
            params: {
              newid,
              name: cloneMarkerName(spec.hcp_id),
              description: buildDescription({ hcp_id: spec.hcp_id, project_id: spec.project_id, name: spec.name, tags: spec.tags }),
              full: settings.full_clone,
              ...(settings.full_clone && settings.storage ? { storage: settings.storage } : {}),
              ...(settings.pool ? { pool: settings.pool } : {}),
              ...(plan.targetNode !== plan.templateNode ? { target: plan.targetNode } : {}),
            },
          });
          await this.waitTask(upid, plan.templateNode, ctx);
        });
      } catch (err) {
        if (isVmidTaken(err) && attempt < this.timing.vmidAttempts) continue;
        if (outcomeUnknown(err)) {
          // The clone may have started before the connection broke: if so, it is ours.
          const found = await this.locate(spec.hcp_id, ctx);
          if (found) return found;
        }
        if (isVmidTaken(err)) {
          throw new HcpError('PROVIDER_UNAVAILABLE', 'the provider kept giving away new VM ids before the clone', (err as HcpError).details);
        }
        if (err instanceof ProxmoxApiError && /does not exist/i.test(err.allText)) {
          const provider = (err.details as { provider?: object } | undefined)?.provider;
          throw new HcpError('INVALID_REQUEST', 'the image is not available on this cluster (its template is missing)', {
            provider: { ...provider, image_ref: spec.image_ref },
          }, false);
        }
        throw err;
      }
      return { node: plan.targetNode, vmid: newid, config: await this.readConfig({ node: plan.targetNode, vmid: newid }, ctx) };
    }
  }

  /** Waits while a clone (ours, from an earlier attempt) still holds the VM. */
  private async waitUntilUnlocked(loc: Located, hcpId: string, ctx: CallContext): Promise<Located> {
    let delay = this.timing.taskPollMinMs;
    let config = loc.config;
    while (config.lock === 'clone' || config.lock === 'create') {
      await this.pause(delay, ctx, 'VM is locked (clone)');
      delay = Math.min(delay * 1.5, this.timing.taskPollMaxMs);
      try {
        config = await this.readConfig(loc, ctx);
      } catch (err) {
        // A clone that failed removes its target: the next attempt clones again.
        if (isVmMissing(err)) {
          throw new HcpError('CONFLICT', `VM ${hcpId} disappeared while it was being created`, { phase: 'creating' }, true);
        }
        throw err;
      }
    }
    return { ...loc, config };
  }

  /** Brings the clone's config to what the spec asks; sends only what differs, so a retry is cheap. */
  private async configure(loc: Located, spec: CreateVmSpec, settings: ProxmoxSettings, ctx: CallContext): Promise<VmConfig> {
    const config = loc.config;
    const desired: Record<string, string> = {
      name: dnsName(spec.name) ?? cloneMarkerName(spec.hcp_id).replace(/^hcp-/, 'vm-'),
      description: buildDescription({ hcp_id: spec.hcp_id, project_id: spec.project_id, name: spec.name, tags: spec.tags }),
      tags: [HCP_TAG, hcpIdTag(spec.hcp_id)].join(';'),
      cores: String(spec.vcpus),
      memory: String(spec.ram_mb),
      ciuser: settings.ciuser,
      ipconfig0: settings.ipconfig0,
      net0: netOnBridge(typeof config.net0 === 'string' ? config.net0 : undefined, settings.bridge),
    };
    if (spec.ssh_keys.length > 0) desired.sshkeys = encodeSshKeys(spec.ssh_keys);
    if (settings.guest_agent) desired.agent = '1';

    const changes: Record<string, string> = {};
    for (const [key, want] of Object.entries(desired)) {
      if (!sameConfigValue(key, config[key], want)) changes[key] = want;
    }
    if (Object.keys(changes).length === 0) return config;
    await this.withLockRetry(ctx, 'configure', () =>
      this.client.put('/nodes/{node}/qemu/{vmid}/config', ids(loc), ctx, { params: changes, idempotent: true }),
    );
    return this.readConfig(loc, ctx);
  }

  private async resizeDisk(loc: Located, spec: CreateVmSpec, settings: ProxmoxSettings, ctx: CallContext): Promise<void> {
    const disk = settings.disk ?? bootDiskOf(loc.config);
    if (!disk || typeof loc.config[disk] !== 'string') {
      throw new HcpError('INVALID_REQUEST', "the image's template has no disk to size", {
        provider: { image_ref: spec.image_ref, ...(settings.disk ? { disk: settings.disk } : {}) },
      }, false);
    }
    const current = diskSizeOf(loc.config[disk] as string);
    // Proxmox cannot shrink disks: a flavor smaller than the template keeps the template's size.
    if (current !== undefined && current >= spec.disk_gb * GiB) return;
    await this.withLockRetry(ctx, 'resize', async () => {
      const upid = await this.client.put('/nodes/{node}/qemu/{vmid}/resize', ids(loc), ctx, {
        params: { disk, size: `${spec.disk_gb}G` },
      });
      await this.waitTask(upid, loc.node, ctx);
    });
    loc.config = await this.readConfig(loc, ctx);
  }

  // ---------------------------------------------------------------------------------------------
  // Power

  private async ensureRunning(loc: Located, ctx: CallContext): Promise<void> {
    const st = await this.status(loc, ctx);
    if (st.status === 'running') {
      if (st.qmpstatus === 'paused') {
        await this.withLockRetry(ctx, 'resume', async () => {
          const upid = await this.client.post('/nodes/{node}/qemu/{vmid}/status/resume', ids(loc), ctx);
          await this.waitTask(upid, loc.node, ctx);
        });
      }
      return;
    }
    await this.withLockRetry(ctx, 'start', async () => {
      try {
        const upid = await this.client.post('/nodes/{node}/qemu/{vmid}/status/start', ids(loc), ctx);
        await this.waitTask(upid, loc.node, ctx);
      } catch (err) {
        if (messageMatches(err, /already running/i)) return;
        throw err;
      }
    });
  }

  /** ACPI/agent shutdown with a timeout, then a hard stop if the guest is still up. */
  private async gracefulStop(loc: Located, ctx: CallContext): Promise<void> {
    const timeout = this.shutdownTimeoutS(ctx);
    if (timeout > 0) {
      try {
        await this.withLockRetry(ctx, 'shutdown', async () => {
          const upid = await this.client.post('/nodes/{node}/qemu/{vmid}/status/shutdown', ids(loc), ctx, { params: { timeout } });
          await this.waitTask(upid, loc.node, ctx);
        });
      } catch (err) {
        if (messageMatches(err, /not running/i)) return;
        // The guest ignored the request ("got timeout") or cannot shut down (paused): power it off.
        if (!(err instanceof ProxmoxTaskError || messageMatches(err, /is paused|cannot shutdown/i))) throw err;
      }
      if ((await this.status(loc, ctx)).status === 'stopped') return;
    }
    await this.hardStop(loc, ctx);
  }

  private async hardStop(loc: Located, ctx: CallContext): Promise<void> {
    await this.withLockRetry(ctx, 'stop', async () => {
      const upid = await this.client.post('/nodes/{node}/qemu/{vmid}/status/stop', ids(loc), ctx);
      await this.waitTask(upid, loc.node, ctx);
    });
  }

  /** The cluster's graceful timeout, cut so that a hard stop still fits before the deadline. */
  private shutdownTimeoutS(ctx: CallContext): number {
    const leftS = Math.floor((ctx.deadline.getTime() - Date.now() - this.timing.stopMarginMs) / 1000);
    return Math.max(0, Math.min(this.settings.shutdown_timeout_s, leftS));
  }

  // ---------------------------------------------------------------------------------------------
  // Describe

  private async describeLocated(hcpId: string, loc: Located, ctx: CallContext): Promise<VmDescription> {
    const st = await this.status(loc, ctx);
    const power = powerOf(st);
    const addresses = power === 'running' && agentEnabled(loc.config.agent) ? await this.agentAddresses(loc, ctx) : [];
    return {
      hcp_id: hcpId,
      power_state: power,
      addresses,
      provider_ref: { provider_id: this.providerId, cluster_id: this.clusterId, node: loc.node, vmid: loc.vmid },
    };
  }

  /** After a start: gives the guest agent a while to report an address, never past the deadline. */
  private async describeWithAddresses(hcpId: string, loc: Located, settings: ProxmoxSettings, ctx: CallContext): Promise<VmDescription> {
    let description = await this.describeLocated(hcpId, loc, ctx);
    if (!agentEnabled(loc.config.agent) || settings.address_wait_s === 0) return description;
    const until = Math.min(Date.now() + settings.address_wait_s * 1000, ctx.deadline.getTime() - this.timing.addressPollMs - 1000);
    while (description.power_state === 'running' && description.addresses.length === 0 && Date.now() + this.timing.addressPollMs < until) {
      await this.pause(this.timing.addressPollMs, ctx, 'waiting for the guest agent');
      description = await this.describeLocated(hcpId, loc, ctx);
    }
    return description;
  }

  /** Global addresses the guest agent reports, by NIC (net0 ... matched by MAC); [] when it does not answer. */
  private async agentAddresses(loc: Located, ctx: CallContext): Promise<VmAddress[]> {
    let data: { result?: unknown } | null;
    try {
      data = await this.client.request<{ result?: unknown }>('GET', '/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces', ids(loc), ctx, {
        idempotent: true,
        timeoutMs: this.timing.agentTimeoutMs,
      });
    } catch (err) {
      // An agent that is not (yet) running is normal; a call that ran out of time is not.
      if (err instanceof HcpError && err.code === 'PROVIDER_TIMEOUT' && (ctx.signal.aborted || Date.now() >= ctx.deadline.getTime())) throw err;
      return [];
    }
    const interfaces = Array.isArray(data?.result) ? (data!.result as Array<Record<string, unknown>>) : [];
    const nicByMac = new Map<string, string>();
    for (const [key, value] of Object.entries(loc.config)) {
      const mac = /^net\d+$/.test(key) && typeof value === 'string' ? macOf(value) : undefined;
      if (mac) nicByMac.set(mac, key);
    }
    const out: VmAddress[] = [];
    for (const iface of interfaces) {
      if (iface.name === 'lo') continue;
      const mac = typeof iface['hardware-address'] === 'string' ? iface['hardware-address'].toUpperCase() : '';
      const nic = nicByMac.get(mac) ?? String(iface.name ?? 'unknown');
      const ips = Array.isArray(iface['ip-addresses']) ? (iface['ip-addresses'] as Array<Record<string, unknown>>) : [];
      for (const ip of ips) {
        const address = ip['ip-address'];
        const type = ip['ip-address-type'];
        if (typeof address !== 'string' || (type !== 'ipv4' && type !== 'ipv6')) continue;
        if (!isGlobalAddress(address, type)) continue;
        out.push({ type, address, nic });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Tasks, locks, time

  /** Follows a task until it stops; throws ProxmoxTaskError unless it ended OK (or with warnings). */
  private async waitTask(upid: unknown, fallbackNode: string, ctx: CallContext): Promise<void> {
    // `POST .../config` and a few others may finish synchronously and answer null.
    if (upid === null || upid === undefined) return;
    if (typeof upid !== 'string') throw badAnswer('task id');
    const parsed = parseUpid(upid);
    const node = parsed?.node ?? fallbackNode;
    const taskType = parsed?.type ?? 'task';
    let delay = this.timing.taskPollMinMs;
    for (;;) {
      let st: { status?: string; exitstatus?: string } | null = null;
      try {
        st = await this.client.get('/nodes/{node}/tasks/{upid}/status', { node, upid }, ctx);
      } catch (err) {
        // A task may not be visible on the node for a moment after it was started.
        if (!(err instanceof ProxmoxApiError && err.status === 400 && /no such task/i.test(err.allText))) throw err;
      }
      if (st?.status === 'stopped') {
        const exit = typeof st.exitstatus === 'string' ? st.exitstatus : 'unexpected status';
        if (exit === 'OK' || /^WARNINGS: \d+$/.test(exit)) return;
        const log = await this.taskLog(node, upid, ctx);
        throw new ProxmoxTaskError(`the provider failed to ${taskVerb(taskType)}`, exit, {
          provider: { task: taskType, message: exit, ...(log.length > 0 ? { log } : {}) },
        });
      }
      if (Date.now() + delay >= ctx.deadline.getTime()) {
        throw new HcpError('PROVIDER_TIMEOUT', `the provider did not finish the ${taskVerb(taskType)} before the deadline`, {
          reason: 'deadline',
          provider: { task: taskType },
        });
      }
      await this.pause(delay, ctx, `task ${taskType}`);
      delay = Math.min(delay * 1.5, this.timing.taskPollMaxMs);
    }
  }

  /** The last lines of a task's log, for ops; [] when it cannot be read. */
  private async taskLog(node: string, upid: string, ctx: CallContext): Promise<string[]> {
    try {
      const lines = await this.client.get<Array<{ n?: number; t?: string }>>('/nodes/{node}/tasks/{upid}/log', { node, upid }, ctx, {
        start: 0,
        limit: 500,
      });
      return (lines ?? []).map((l) => String(l.t ?? '')).filter((t) => t !== '' && t !== 'no content').slice(-10);
    } catch {
      return [];
    }
  }

  /** Repeats `fn` while Proxmox refuses it for a lock, with growing waits, until the deadline. */
  private async withLockRetry<T>(ctx: CallContext, step: string, fn: () => Promise<T>): Promise<T> {
    let delay = this.timing.lockRetryBaseMs;
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (!isLockError(err)) throw err;
        const wait = delay * (0.75 + Math.random() * 0.5);
        if (Date.now() + wait >= ctx.deadline.getTime()) {
          throw new HcpError('PROVIDER_TIMEOUT', `the VM stayed locked on the provider until the deadline (${step})`, {
            reason: 'locked',
            ...(err as HcpError).details,
          });
        }
        await this.pause(wait, ctx, step);
        delay = Math.min(delay * 2, this.timing.lockRetryMaxMs);
      }
    }
  }

  /** Sleeps, but never past the deadline and not after an abort. */
  private pause(ms: number, ctx: CallContext, step: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const over = (why: 'aborted' | 'deadline') =>
        new HcpError('PROVIDER_TIMEOUT', why === 'aborted' ? `the provider ${step} was aborted` : `the provider ${step} did not finish before the deadline`, {
          reason: why,
        });
      if (ctx.signal.aborted) return reject(over('aborted'));
      const left = ctx.deadline.getTime() - Date.now();
      if (left <= 0) return reject(over('deadline'));
      const onAbort = () => {
        clearTimeout(timer);
        reject(over('aborted'));
      };
      const timer = setTimeout(() => {
        ctx.signal.removeEventListener('abort', onAbort);
        if (ms > left) reject(over('deadline'));
        else resolve();
      }, Math.min(ms, left));
      ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private begin(ctx: CallContext, operation: string): void {
    if (ctx.signal.aborted) {
      throw new HcpError('PROVIDER_TIMEOUT', `the provider ${operation} was aborted`, { step: operation, reason: 'aborted' });
    }
    if (Date.now() >= ctx.deadline.getTime()) {
      throw new HcpError('PROVIDER_TIMEOUT', `the provider ${operation} did not finish before the deadline`, { step: operation, reason: 'deadline' });
    }
  }

  /** Runs calls for one HCP id one after another in this process (a second create waits and finds the first's VM). */
  private serial<T>(hcpId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(hcpId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.queues.set(hcpId, tail);
    void tail.then(() => {
      if (this.queues.get(hcpId) === tail) this.queues.delete(hcpId);
    });
    return run;
  }
}

// -----------------------------------------------------------------------------------------------

function isParsedCredentials(value: unknown): value is ProxmoxCredentials {
  const kind = (value as { kind?: unknown })?.kind;
  return kind === 'token' || kind === 'password';
}

function ids(loc: { node: string; vmid: number }): { node: string; vmid: number } {
  return { node: loc.node, vmid: loc.vmid };
}

const TASK_VERBS: Record<string, string> = {
  qmclone: 'clone the image',
  qmcreate: 'create the VM',
  qmconfig: 'configure the VM',
  resize: 'resize the disk',
  qmstart: 'start the VM',
  qmstop: 'power off the VM',
  qmshutdown: 'shut down the VM',
  qmreboot: 'reboot the VM',
  qmreset: 'reset the VM',
  qmresume: 'resume the VM',
  qmdestroy: 'delete the VM',
};

/** What a task does, in words for the message (the task type itself is kept in details). */
function taskVerb(type: string): string {
  return TASK_VERBS[type] ?? 'run a task';
}

function badAnswer(what: string): HcpError {
  return new HcpError('PROVIDER_UNAVAILABLE', 'the provider gave an unexpected answer', { provider: { operation: what } });
}

function checkSpec(spec: CreateVmSpec): void {
  if (spec.user_data !== undefined && spec.user_data !== '') {
    // Custom cloud-init user data needs a snippet file on a Proxmox storage, which the API cannot upload.
    throw new HcpError('FEATURE_NOT_SUPPORTED', "user_data is not supported by this cluster's provider yet", { capability: 'user_data' });
  }
  const positive = (n: number) => Number.isInteger(n) && n > 0;
  if (!positive(spec.vcpus) || !positive(spec.ram_mb) || spec.ram_mb < 16 || !positive(spec.disk_gb)) {
    throw new HcpError('INVALID_REQUEST', 'vcpus, ram_mb (at least 16) and disk_gb must be positive integers');
  }
}

/** A failure after which the server may or may not have done the work. */
function outcomeUnknown(err: unknown): boolean {
  if (err instanceof ProxmoxApiError) return err.status === 0 || err.status >= 500;
  return err instanceof HcpError && err.code === 'PROVIDER_TIMEOUT';
}

function powerOf(st: VmStatus): PowerState {
  if (st.status === 'stopped') return 'stopped';
  if (st.status !== 'running') return 'unknown';
  const q = st.qmpstatus ?? 'running';
  if (q === 'running') return 'running';
  if (q === 'paused' || q === 'prelaunch' || q === 'suspended') return 'paused';
  return 'unknown';
}

function isGlobalAddress(address: string, type: 'ipv4' | 'ipv6'): boolean {
  if (type === 'ipv4') return !/^(127\.|169\.254\.|0\.)/.test(address);
  const a = address.toLowerCase();
  return !(a === '::1' || a === '::' || /^fe[89ab]/.test(a));
}

function sameConfigValue(key: string, current: unknown, want: string): boolean {
  if (current === undefined || current === null) return false;
  switch (key) {
    case 'memory':
      return memoryMiB(current) === Number(want);
    case 'cores':
      return Number(current) === Number(want);
    case 'agent':
      return agentEnabled(current) === agentEnabled(want);
    case 'tags': {
      const a = new Set(parseTags(current));
      const b = parseTags(want);
      return a.size === b.length && b.every((t) => a.has(t));
    }
    default:
      return String(current) === want;
  }
}

interface ClonePlan {
  templateNode: string;
  templateVmid: number;
  targetNode: string;
}

/**
 * Where to clone from and to: the online node (of the cluster's `nodes`) with the most free memory
 * that holds the template, or, when the target storage is shared, the best node overall with
 * `target` set.
 */
function planClone(resources: ClusterResource[], imageRef: string, settings: ProxmoxSettings): ClonePlan {
  const nodes = resources.filter(
    (r) => r.type === 'node' && r.status === 'online' && typeof r.node === 'string' && (!settings.nodes || settings.nodes.includes(r.node)),
  );
  if (nodes.length === 0) {
    throw new HcpError('PROVIDER_UNAVAILABLE', 'no host of this cluster is online', settings.nodes ? { provider: { nodes: settings.nodes } } : undefined);
  }
  const templates = resources.filter(
    (r) => r.type === 'qemu' && isTemplate(r) && typeof r.node === 'string' && (String(r.vmid) === imageRef || r.name === imageRef),
  );
  if (templates.length === 0) {
    throw new HcpError('INVALID_REQUEST', 'the image is not available on this cluster (no template matches its reference)', {
      provider: { image_ref: imageRef },
    }, false);
  }
  const free = (n: ClusterResource) => (n.maxmem ?? 0) - (n.mem ?? 0);
  const best = (list: ClusterResource[]) => list.reduce((a, b) => (free(b) > free(a) ? b : a));
  const shared =
    settings.full_clone &&
    !!settings.storage &&
    resources.some((r) => r.type === 'storage' && r.storage === settings.storage && truthy(r.shared));

  let target: ClusterResource;
  let template: ClusterResource;
  if (shared) {
    target = best(nodes);
    template = templates.find((t) => t.node === target.node) ?? templates[0];
  } else {
    const holding = nodes.filter((n) => templates.some((t) => t.node === n.node));
    if (holding.length === 0) {
      throw new HcpError('INVALID_REQUEST', 'the image is not available on this cluster (its template is on no host the cluster may use)', {
        provider: { image_ref: imageRef, nodes: nodes.map((n) => n.node) },
      }, false);
    }
    target = best(holding);
    template = templates.find((t) => t.node === target.node)!;
  }
  if (settings.full_clone && settings.storage) {
    const available = resources.some((r) => r.type === 'storage' && r.storage === settings.storage && r.node === target.node);
    if (!available) {
      throw new HcpError('INVALID_REQUEST', "the cluster's storage is not available on the chosen host", {
        provider: { storage: settings.storage, node: target.node },
      }, false);
    }
  }
  return { templateNode: template.node!, templateVmid: template.vmid!, targetNode: target.node! };
}
