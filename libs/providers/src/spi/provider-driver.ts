import type { Duplex } from 'node:stream';
import type { Capabilities, ConsoleType, VmAddress, VmCreateRequestedData, VmResources } from '@hcp/domain';

/**
 * The provider driver SPI. Every hypervisor (simulator, Proxmox VE, vSphere, libvirt, Hyper-V) is one
 * implementation of `ProviderDriver`. Calls are made by job workers and must be idempotent: each one
 * identifies the VM by its HCP id, never by a provider id that HCP might not have recorded yet.
 * Failures are thrown as `HcpError` of the taxonomy (PROVIDER_UNAVAILABLE, PROVIDER_TIMEOUT, ...).
 */

/** The capability model is the domain's (libs/domain/src/ops/capabilities.ts); drivers declare theirs. */
export type { Capabilities, ConsoleType };

export type PowerState = 'running' | 'stopped' | 'paused' | 'unknown';

/** Addresses are the domain's: what a driver reports is what the VM's events record. */
export type { VmAddress };

/** Internal placement of a VM on a provider. Never shown to tenants. */
export interface ProviderRef {
  provider_id: string;
  cluster_id: string;
  /** Driver-specific handle (Proxmox node/vmid, vSphere moid, ...). */
  [key: string]: unknown;
}

/** What a driver needs to build a VM: the tenant's request, with the image and size resolved. */
export interface CreateVmSpec
  extends Pick<VmCreateRequestedData, 'project_id' | 'name' | 'ssh_keys' | 'user_data' | 'tags' | 'power_on'>,
    VmResources {
  hcp_id: string;
  /** The image's reference on this provider (template, image path, ...). */
  image_ref: string;
  placement_hints?: Record<string, unknown>;
}

export interface VmDescription {
  hcp_id: string;
  power_state: PowerState;
  addresses: VmAddress[];
  provider_ref: ProviderRef;
  /** The tenant's tags as the provider holds them, where the driver keeps them there (`provider_tags`). */
  tags?: Record<string, string>;
}

/**
 * A live console on the provider, already connected: HCP's console proxy speaks RFB over `stream`
 * (it authenticates to the provider with `rfb_password` and relays from ClientInit on). Provider
 * tickets and passwords stay inside this object and never leave HCP.
 */
export interface ProviderConsole {
  protocol: 'rfb';
  /** Bytes to and from the provider's RFB server (a websocket, a TCP socket, an in-process server). */
  stream: Duplex;
  /** The VNC password the provider's RFB server asks for; undefined when it offers security type None. */
  rfb_password?: string;
}

/** Context of one call: the job's deadline and an abort signal fired when the lease is lost. */
export interface CallContext {
  deadline: Date;
  signal: AbortSignal;
  trace_id?: string;
  /**
   * What earlier attempts of this job wrote with `record` (the latest value per key); empty on a first
   * attempt and for calls made outside a job.
   */
  recorded?: Readonly<Record<string, unknown>>;
  /**
   * Writes a fact into the job's history before the driver acts on it (e.g. the VMID a clone is about
   * to take), so a retried attempt in any process finds it in `recorded`. Absent outside a job.
   */
  record?(key: string, value: unknown): Promise<void>;
}

export interface ProviderDriver {
  readonly type: string;
  capabilities(): Capabilities;
  /** Creates the VM unless one with `spec.hcp_id` exists; either way returns its description. */
  createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription>;
  /** Powers on; succeeds when already running. */
  startVm(hcpId: string, ctx: CallContext): Promise<VmDescription>;
  /** Graceful shutdown (then power off after the driver's timeout), or immediate power off when `force`. */
  stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription>;
  rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription>;
  /** Deletes the VM; succeeds when it is already gone. */
  deleteVm(hcpId: string, ctx: CallContext): Promise<void>;
  /** Describes the VM, or returns null when the provider has no VM with this HCP id. */
  describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null>;
  /**
   * Every VM of this cluster that carries an HCP id (in any state, also half-created ones), in one
   * pass over the provider: what the reconcile loop compares with HCP's records and finds orphans in.
   * Optional until each driver has it; a driver without it is not reconciled.
   */
  listVms?(ctx: CallContext): Promise<VmDescription[]>;
  /** Writes the tenant's tags onto the VM at the provider (only drivers that declare `provider_tags`). */
  updateTags?(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void>;
  /**
   * Opens a fresh console to a running VM (a new provider ticket every time). FEATURE_NOT_SUPPORTED for
   * a type the driver lacks, CONFLICT when the VM is not running, NOT_FOUND when it is gone.
   */
  openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole>;
  /** Reaches the provider with the configured endpoint, TLS and credentials; throws the taxonomy error. */
  checkConnectivity(ctx: CallContext): Promise<void>;
  close?(): Promise<void>;
}
