/**
 * HCP shapes to Proxmox parameters and Proxmox answers to HCP shapes, with no calls: what a create
 * spec asks of a clone and its config, what a status means as a power state, which addresses of the
 * guest agent's answer HCP reports. The string formats underneath are in proxmox-format.ts.
 */
import { HcpError } from '@hcp/domain';
import type { CreateVmSpec, PowerState, VmAddress } from '../spi/provider-driver';
import type { ProxmoxSettings } from './proxmox-config';
import {
  agentEnabled,
  buildDescription,
  cloneMarkerName,
  dnsName,
  encodeSshKeys,
  proxmoxTagList,
  macOf,
  memoryMiB,
  netOnBridge,
  parseTags,
} from './proxmox-format';

/** A row of `/cluster/resources`. */
export interface ClusterResource {
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

export type VmConfig = Record<string, unknown>;

/** `/nodes/{node}/qemu/{vmid}/status/current`. */
export interface VmStatus {
  status: string;
  qmpstatus?: string;
  lock?: string;
  agent?: number | boolean;
}

export const isTemplate = (r: ClusterResource) => r.template === 1 || r.template === true;

export function badAnswer(what: string): HcpError {
  return new HcpError('PROVIDER_UNAVAILABLE', 'the provider gave an unexpected answer', {
    provider: { operation: what },
  });
}

export function checkSpec(spec: CreateVmSpec): void {
  if (spec.user_data !== undefined && spec.user_data !== '') {
    // Custom cloud-init user data needs a snippet file on a Proxmox storage, which the API cannot upload.
    throw new HcpError('FEATURE_NOT_SUPPORTED', "user_data is not supported by this cluster's provider yet", {
      capability: 'user_data',
    });
  }
  const positive = (n: number) => Number.isInteger(n) && n > 0;
  if (!positive(spec.vcpus) || !positive(spec.ram_mb) || spec.ram_mb < 16 || !positive(spec.disk_gb)) {
    throw new HcpError('INVALID_REQUEST', 'vcpus, ram_mb (at least 16) and disk_gb must be positive integers');
  }
}

function descriptionOf(spec: CreateVmSpec): string {
  return buildDescription({ hcp_id: spec.hcp_id, project_id: spec.project_id, name: spec.name, tags: spec.tags });
}

/** The clone call: it cannot set tags, so the VM is marked by its name and description until configured. */
export function cloneParams(
  spec: CreateVmSpec,
  settings: ProxmoxSettings,
  plan: { templateNode: string; targetNode: string },
  newid: number,
): Record<string, string | number | boolean> {
  return {
    newid,
    name: cloneMarkerName(spec.hcp_id),
    description: descriptionOf(spec),
    full: settings.full_clone,
    ...(settings.full_clone && settings.storage ? { storage: settings.storage } : {}),
    ...(settings.pool ? { pool: settings.pool } : {}),
    ...(plan.targetNode !== plan.templateNode ? { target: plan.targetNode } : {}),
  };
}

/** The config entries a create sets on its clone. */
export function desiredConfig(spec: CreateVmSpec, settings: ProxmoxSettings, config: VmConfig): Record<string, string> {
  const desired: Record<string, string> = {
    name: dnsName(spec.name) ?? cloneMarkerName(spec.hcp_id).replace(/^hcp-/, 'vm-'),
    description: descriptionOf(spec),
    // The tenant's tags from the start (as updateTags writes them later), so the first reconcile pass
    // finds nothing to write; tags the template carries are someone else's and stay.
    tags: proxmoxTagList(spec.hcp_id, spec.tags, config.tags, {}),
    cores: String(spec.vcpus),
    memory: String(spec.ram_mb),
    ciuser: settings.ciuser,
    ipconfig0: settings.ipconfig0,
    net0: netOnBridge(typeof config.net0 === 'string' ? config.net0 : undefined, settings.bridge),
  };
  if (spec.ssh_keys.length > 0) desired.sshkeys = encodeSshKeys(spec.ssh_keys);
  // Both ways: a template's `agent: 1` stays on a VM only when the settings want the agent.
  desired.agent = settings.guest_agent ? '1' : '0';
  return desired;
}

/** The entries of `desired` that `config` does not already hold, in whatever form Proxmox reports them. */
export function configChanges(config: VmConfig, desired: Record<string, string>): Record<string, string> {
  const changes: Record<string, string> = {};
  for (const [key, want] of Object.entries(desired)) {
    if (!sameConfigValue(key, config[key], want)) changes[key] = want;
  }
  return changes;
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

export function powerOf(st: VmStatus): PowerState {
  if (st.status === 'stopped') return 'stopped';
  if (st.status !== 'running') return 'unknown';
  const q = st.qmpstatus ?? 'running';
  if (q === 'running') return 'running';
  if (q === 'paused' || q === 'prelaunch' || q === 'suspended') return 'paused';
  return 'unknown';
}

/** The global addresses in a `network-get-interfaces` result, by NIC (net0 ... matched by MAC). */
export function agentAddressesOf(result: unknown, config: VmConfig): VmAddress[] {
  const interfaces = Array.isArray(result) ? (result as Array<Record<string, unknown>>) : [];
  const nicByMac = new Map<string, string>();
  for (const [key, value] of Object.entries(config)) {
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

function isGlobalAddress(address: string, type: 'ipv4' | 'ipv6'): boolean {
  if (type === 'ipv4') return !/^(127\.|169\.254\.|0\.)/.test(address);
  const a = address.toLowerCase();
  return !(a === '::1' || a === '::' || /^fe[89ab]/.test(a));
}
