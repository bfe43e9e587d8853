/**
 * Reading one HCP VM on the host: its domain by HCP id, its power state and addresses. Every other
 * step of the driver starts from here.
 */
import { HcpError, notFound } from '@hcp/domain';
import type { CallContext, PowerState, VmAddress, VmDescription } from '../spi/provider-driver';
import { parseDomainXml, type ParsedDomain } from './domain-xml';
import { isDomainMissing } from './libvirt-errors';
import { virsh, type VirshOptions } from './virsh';

export interface LibvirtHost {
  virsh: VirshOptions;
  pool: string;
  network?: string;
  vnc_listen: string;
  shutdown_timeout_ms: number;
  provider_id: string;
  cluster_id: string;
}

/** HCP ids become file and domain names: anything else is not an id HCP made. */
const HCP_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const isHcpId = (id: string) => HCP_ID.test(id);

export const domainName = (hcpId: string) => `hcp-${hcpId}`;
export const volumeName = (hcpId: string) => `hcp-${hcpId}.qcow2`;

export function powerStateOf(domstate: string): PowerState {
  const state = domstate
    .trim()
    .split('\n')[0]
    ?.replace(/\s*\(.*\)$/, '')
    .trim();
  switch (state) {
    case 'running':
    case 'idle':
    case 'blocked':
    case 'in shutdown':
      return 'running';
    case 'shut off':
    case 'crashed':
      return 'stopped';
    case 'paused':
    case 'pmsuspended':
      return 'paused';
    default:
      return 'unknown';
  }
}

/** The domain XML of an HCP id, or null when there is no such domain (or it is not HCP's). */
export async function readDomain(host: LibvirtHost, hcpId: string, ctx: CallContext): Promise<ParsedDomain | null> {
  if (!isHcpId(hcpId)) return null;
  try {
    const parsed = parseDomainXml(await virsh(host.virsh, ['dumpxml', domainName(hcpId)], ctx));
    return parsed.metadata?.hcp_id === hcpId ? parsed : null;
  } catch (err) {
    if (isDomainMissing(err)) return null;
    throw err;
  }
}

export async function requireDomain(host: LibvirtHost, hcpId: string, ctx: CallContext): Promise<ParsedDomain> {
  const domain = await readDomain(host, hcpId, ctx);
  if (!domain) throw notFound('VM');
  return domain;
}

/** `domstate --reason` as [state, reason]; NOT_FOUND when the domain went away. */
export async function domainState(
  host: LibvirtHost,
  name: string,
  ctx: CallContext,
  timeoutMs?: number,
): Promise<{ power: PowerState; state: string; reason: string }> {
  const out = (await virsh(host.virsh, ['domstate', name, '--reason'], ctx, { timeoutMs })).trim();
  const m = /^(.*?)\s*(?:\((.*)\))?$/.exec(out.split('\n')[0] ?? '');
  return { power: powerStateOf(out), state: m?.[1] ?? out, reason: m?.[2] ?? '' };
}

/** `domifaddr --source lease`: only a libvirt network's DHCP leases name a guest's address. */
export async function domainAddresses(host: LibvirtHost, name: string, ctx: CallContext): Promise<VmAddress[]> {
  if (!host.network) return [];
  let out: string;
  try {
    out = await virsh(host.virsh, ['domifaddr', name, '--source', 'lease'], ctx);
  } catch (err) {
    // No lease yet (the guest is booting) is no address, not a failure of the call.
    if (err instanceof HcpError && err.code !== 'PROVIDER_TIMEOUT' && err.code !== 'PROVIDER_UNAVAILABLE') return [];
    throw err;
  }
  const addresses: VmAddress[] = [];
  let nic = '';
  for (const line of out.split('\n')) {
    // ` vnet0  52:54:00:..  ipv4  192.168.122.5/24`; a second address of the same NIC names it `-`.
    const m = /^\s*(\S+)\s+(\S+)\s+(ipv4|ipv6)\s+([0-9a-fA-F.:]+)\/\d+/.exec(line);
    if (!m) continue;
    if (m[1] !== '-') nic = m[1];
    addresses.push({ type: m[3] as 'ipv4' | 'ipv6', address: m[4], nic });
  }
  return addresses;
}

export async function describeDomain(
  host: LibvirtHost,
  domain: ParsedDomain,
  ctx: CallContext,
): Promise<VmDescription> {
  const meta = domain.metadata!;
  const { power } = await domainState(host, domain.name, ctx);
  return {
    hcp_id: meta.hcp_id,
    power_state: power,
    addresses: power === 'running' ? await domainAddresses(host, domain.name, ctx) : [],
    provider_ref: {
      provider_id: host.provider_id,
      cluster_id: host.cluster_id,
      domain: domain.name,
      uri: host.virsh.uri,
    },
    tags: { ...meta.tags },
  };
}
