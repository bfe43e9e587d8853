/**
 * The libvirt domain XML of an HCP VM, and what HCP reads back from `virsh dumpxml`. The HCP id,
 * project and tags live in the domain's <metadata> under HCP's own namespace, which is how a VM is
 * recognised as HCP's (listVms) and how a repeated create finds the domain it already made.
 */
import type { CreateVmSpec } from '../spi/provider-driver';

export const HCP_XMLNS = 'https://hcp.dev/xmlns/libvirt/1';
/** The prefix libvirt stores the metadata element under (`virsh metadata --key`). */
export const HCP_XML_KEY = 'hcp';

export interface HcpMetadata {
  hcp_id: string;
  project_id: string;
  tags: Record<string, string>;
}

export interface DomainSpec {
  name: string;
  metadata: HcpMetadata;
  vcpus: number;
  ram_mb: number;
  pool: string;
  volume: string;
  /** A libvirt network; absent: user-mode networking (no address HCP can report). */
  network?: string;
  vnc_listen: string;
  /** A random VNC password nobody is told: it switches VNC authentication on until a console sets one. */
  vnc_password: string;
}

/** The guest's serial output (its boot messages), kept by virtlogd for ops. */
export const serialLogPath = (name: string) => `/var/log/libvirt/qemu/${name}.serial.log`;

export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);
}

export function unescapeXml(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
    const lower = e.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(Number.parseInt(lower.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[lower] ?? '';
  });
}

/** The metadata element's children, unprefixed (virsh metadata --key adds the prefix and namespace). */
export function metadataBody(meta: HcpMetadata): string {
  return (
    `<id>${escapeXml(meta.hcp_id)}</id>` +
    `<project>${escapeXml(meta.project_id)}</project>` +
    // JSON keeps tag keys exactly (any text, spaces included) without an element per key.
    `<tags>${escapeXml(JSON.stringify(meta.tags))}</tags>`
  );
}

export function metadataElement(meta: HcpMetadata): string {
  return `<vm>${metadataBody(meta)}</vm>`;
}

function prefixed(meta: HcpMetadata): string {
  return metadataBody(meta).replace(/<(\/?)(id|project|tags)>/g, `<$1${HCP_XML_KEY}:$2>`);
}

export function domainXml(spec: DomainSpec): string {
  const nic = spec.network
    ? `<interface type='network'><source network='${escapeXml(spec.network)}'/><model type='virtio'/></interface>`
    : `<interface type='user'><model type='virtio'/></interface>`;
  return `<domain type='qemu'>
  <name>${escapeXml(spec.name)}</name>
  <metadata>
    <${HCP_XML_KEY}:vm xmlns:${HCP_XML_KEY}='${HCP_XMLNS}'>${prefixed(spec.metadata)}</${HCP_XML_KEY}:vm>
  </metadata>
  <memory unit='MiB'>${Math.trunc(spec.ram_mb)}</memory>
  <vcpu>${Math.trunc(spec.vcpus)}</vcpu>
  <os><type arch='x86_64'>hvm</type><boot dev='hd'/></os>
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='volume' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source pool='${escapeXml(spec.pool)}' volume='${escapeXml(spec.volume)}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    ${nic}
    <serial type='pty'><log file='${escapeXml(serialLogPath(spec.name))}' append='off'/></serial>
    <console type='pty'/>
    <graphics type='vnc' port='-1' autoport='yes' listen='${escapeXml(spec.vnc_listen)}' passwd='${escapeXml(spec.vnc_password)}'/>
    <video><model type='vga'/></video>
  </devices>
</domain>
`;
}

export interface ParsedDomain {
  name: string;
  /** Null for a domain without HCP's metadata (not HCP's). */
  metadata: HcpMetadata | null;
}

function child(xml: string, prefix: string, tag: string): string | undefined {
  const m = new RegExp(`<${prefix}${tag}>([\\s\\S]*?)</${prefix}${tag}>`).exec(xml);
  return m ? unescapeXml(m[1]) : undefined;
}

/** Reads the name and HCP metadata out of `virsh dumpxml`. */
export function parseDomainXml(xml: string): ParsedDomain {
  const name = unescapeXml(/<name>([^<]*)<\/name>/.exec(xml)?.[1] ?? '');
  const ns = new RegExp(`xmlns(?::([\\w.-]+))?=["']${HCP_XMLNS.replace(/[.]/g, '\\.')}["']`).exec(xml);
  if (!ns) return { name, metadata: null };
  const prefix = ns[1] ? `${ns[1]}:` : '';
  const hcpId = child(xml, prefix, 'id');
  if (!hcpId) return { name, metadata: null };
  let tags: Record<string, string> = {};
  try {
    const parsed = JSON.parse(child(xml, prefix, 'tags') ?? '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      tags = Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    // Tags someone edited by hand into something that is not JSON: the VM is still HCP's, with no tags.
  }
  return { name, metadata: { hcp_id: hcpId, project_id: child(xml, prefix, 'project') ?? '', tags } };
}

export function metadataOfSpec(spec: CreateVmSpec): HcpMetadata {
  return { hcp_id: spec.hcp_id, project_id: spec.project_id, tags: { ...(spec.tags ?? {}) } };
}
