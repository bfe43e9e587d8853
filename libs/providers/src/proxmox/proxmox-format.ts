/**
 * Pure helpers for the strings Proxmox VE uses: UPIDs, property strings (`virtio=AA:..,bridge=vmbr0`),
 * disk sizes, tag lists, and the marks HCP leaves on its VMs (tags and a description block).
 */

export interface Upid {
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  user: string;
}

/** `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:` (hex numbers; user may be a token id). */
export function parseUpid(upid: string): Upid | null {
  const m =
    /^UPID:([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$/.exec(
      upid,
    );
  if (!m) return null;
  return {
    node: m[1],
    pid: parseInt(m[3], 16),
    pstart: parseInt(m[4], 16),
    starttime: parseInt(m[5], 16),
    type: m[6],
    id: m[7],
    user: m[8],
  };
}

/** Entries of a property string in order; a value without a key has key ''. */
export function parsePropertyString(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of text.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    out.push(eq < 0 ? ['', part] : [part.slice(0, eq), part.slice(eq + 1)]);
  }
  return out;
}

export function printPropertyString(entries: Array<[string, string]>): string {
  return entries.map(([k, v]) => (k === '' ? v : `${k}=${v}`)).join(',');
}

const NIC_MODELS = [
  'e1000',
  'e1000-82540em',
  'e1000-82544gc',
  'e1000-82545em',
  'e1000e',
  'i82551',
  'i82557b',
  'i82559er',
  'ne2k_isa',
  'ne2k_pci',
  'pcnet',
  'rtl8139',
  'virtio',
  'vmxnet3',
];

/**
 * net0 on the given bridge, keeping the model and MAC the clone already has (a new MAC would change
 * the guest's interface and its DHCP lease on every retry).
 */
export function netOnBridge(current: string | undefined, bridge: string): string {
  const entries = current ? parsePropertyString(current) : [];
  if (!entries.some(([k, v]) => NIC_MODELS.includes(k) || (k === '' && NIC_MODELS.includes(v)) || k === 'model')) {
    entries.unshift(['', 'virtio']);
  }
  const at = entries.findIndex(([k]) => k === 'bridge');
  if (at >= 0) entries[at] = ['bridge', bridge];
  else entries.push(['bridge', bridge]);
  return printPropertyString(entries);
}

/** The MAC address in a net[n] value, upper-case, or undefined. */
export function macOf(net: string | undefined): string | undefined {
  if (!net) return undefined;
  for (const [k, v] of parsePropertyString(net)) {
    if ((NIC_MODELS.includes(k) || k === 'macaddr') && /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(v))
      return v.toUpperCase();
  }
  return undefined;
}

export function bridgeOf(net: string | undefined): string | undefined {
  return net ? parsePropertyString(net).find(([k]) => k === 'bridge')?.[1] : undefined;
}

const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** `32G`, `2252M`, `10737418240` → bytes; undefined when not a size. */
export function parseSize(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/.exec(text.trim());
  return m ? Math.floor(Number(m[1]) * UNITS[m[2]]) : undefined;
}

/** The `size=` of a disk value such as `local-lvm:vm-101-disk-0,iothread=1,size=32G`. */
export function diskSizeOf(disk: string | undefined): number | undefined {
  if (!disk) return undefined;
  return parseSize(parsePropertyString(disk).find(([k]) => k === 'size')?.[1]);
}

const DISK_KEY = /^(ide|sata|scsi|virtio)\d+$/;

function isDataDisk(value: string | undefined): boolean {
  if (!value) return false;
  const entries = parsePropertyString(value);
  const volume = entries.find(([k]) => k === '' || k === 'file')?.[1] ?? '';
  if (entries.some(([k, v]) => k === 'media' && v === 'cdrom')) return false;
  if (/cloudinit/.test(volume) || volume === 'none' || volume === 'cdrom') return false;
  return true;
}

/**
 * The storages a clone copies from: every disk's and the cloud-init drive's (an ISO in a CD drive is
 * not copied). A clone to another node needs all of them shared.
 */
export function sourceStoragesOf(config: Record<string, unknown>): string[] {
  const out = new Set<string>();
  for (const [key, value] of Object.entries(config)) {
    if (!DISK_KEY.test(key) || typeof value !== 'string') continue;
    const entries = parsePropertyString(value);
    const volume = entries.find(([k]) => k === '' || k === 'file')?.[1] ?? '';
    const cdrom = entries.some(([k, v]) => k === 'media' && v === 'cdrom');
    if (cdrom && !/cloudinit/.test(volume)) continue;
    const storage = /^([^:]+):/.exec(volume)?.[1];
    if (storage) out.add(storage);
  }
  return [...out];
}

/** The disk a VM boots from: first disk of `boot: order=...`, else legacy `bootdisk`, else the first data disk. */
export function bootDiskOf(config: Record<string, unknown>): string | undefined {
  const get = (k: string) => (typeof config[k] === 'string' ? (config[k] as string) : undefined);
  const boot = get('boot');
  if (boot) {
    const order = parsePropertyString(boot).find(([k]) => k === 'order')?.[1];
    for (const device of order?.split(';') ?? []) {
      if (DISK_KEY.test(device) && isDataDisk(get(device))) return device;
    }
  }
  const legacy = get('bootdisk');
  if (legacy && DISK_KEY.test(legacy) && isDataDisk(get(legacy))) return legacy;
  const keys = Object.keys(config).filter((k) => DISK_KEY.test(k) && isDataDisk(get(k)));
  const rank = (k: string) =>
    ['scsi', 'virtio', 'sata', 'ide'].indexOf(k.replace(/\d+$/, '')) * 1000 + Number(k.replace(/^\D+/, ''));
  return keys.sort((a, b) => rank(a) - rank(b))[0];
}

/** Proxmox tag lists are separated by `;` (`,` and spaces are accepted on input). */
export function parseTags(text: unknown): string[] {
  return typeof text === 'string' ? text.split(/[;,\s]+/).filter((t) => t !== '') : [];
}

/** A Proxmox tag (`[a-z0-9_][a-z0-9_+.-]*`) made from any text; lossy, so HCP confirms ids by the description. */
export function tagSafe(text: string): string {
  const cleaned = text.toLowerCase().replace(/[^a-z0-9_+.-]/g, '_');
  return /^[a-z0-9_]/.test(cleaned) ? cleaned : `_${cleaned}`;
}

export const HCP_TAG = 'hcp';

export function hcpIdTag(hcpId: string): string {
  return `hcp-id-${tagSafe(hcpId)}`;
}

/** A tenant tag as one Proxmox tag token (`env.prod`); lossy, the description keeps the exact tags. */
export function tenantTagToken(key: string, value: string): string {
  return tagSafe(value === '' ? key : `${key}.${value}`);
}

/**
 * The VM's Proxmox tag list with the tenant's tags: HCP's own `hcp` and `hcp-id-<id>` first, then one
 * token per tenant tag, then whatever others put there (tokens of the tags HCP wrote before are HCP's,
 * so they are replaced, not kept).
 */
export function proxmoxTagList(
  hcpId: string,
  tags: Record<string, string>,
  current: unknown,
  previous: Record<string, string>,
): string {
  const ours = new Set([HCP_TAG, hcpIdTag(hcpId)]);
  const before = new Set(Object.entries(previous).map(([k, v]) => tenantTagToken(k, v)));
  const tenant = Object.entries(tags).map(([k, v]) => tenantTagToken(k, v));
  const foreign = parseTags(current).filter((t) => !ours.has(t) && !before.has(t) && !t.startsWith('hcp-id-'));
  return [...new Set([...ours, ...tenant, ...foreign])].join(';');
}

/**
 * The name a clone gets until it is configured: found by `/cluster/resources` (which shows names and
 * tags, not descriptions), so a create interrupted between clone and configure is found again.
 */
export function cloneMarkerName(hcpId: string): string {
  return `hcp-${
    hcpId
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .replace(/-+/g, '-')
      .replace(/^-|-$/g, '') || 'vm'
  }`;
}

/** A DNS name for the VM (also the guest's cloud-init host name), or undefined when none can be made. */
export function dnsName(name: string): string | undefined {
  const label = name
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .split('.')
    .map((l) => l.replace(/^-+|-+$/g, '').slice(0, 63))
    .filter((l) => l !== '')
    .join('.');
  return label !== '' && /^(([a-z0-9]([a-z0-9-]*[a-z0-9])?)\.)*([a-z0-9]([a-z0-9-]*[a-z0-9])?)$/.test(label)
    ? label
    : undefined;
}

const DESCRIPTION_HEAD =
  'Managed by HCP (Hypervisor Control Plane). The hcp-* lines identify this VM; do not edit them.';

export interface HcpMarks {
  hcp_id: string;
  project_id?: string;
  name?: string;
  tags?: Record<string, string>;
}

const oneLine = (s: string) => s.replace(/[\r\n]+/g, ' ');

/** Proxmox refuses a `description` longer than 8 KiB (`PUT .../config` schema, maxLength 8192). */
export const DESCRIPTION_MAX_BYTES = 8192;

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/**
 * The description HCP writes: the identifying lines first, then the tags for whoever looks at the VM in
 * Proxmox. Never more than 8 KiB (counted in UTF-8 bytes, which bounds Proxmox's character count too):
 * tags that do not fit are left out with a note (HCP keeps them; the provider copy is only a courtesy),
 * and the name is cut last. The hcp-id line, which HCP finds its VMs by, is never cut.
 */
export function buildDescription(marks: HcpMarks): string {
  const head = [DESCRIPTION_HEAD, `hcp-id: ${oneLine(marks.hcp_id)}`];
  if (marks.project_id !== undefined) head.push(`hcp-project: ${oneLine(marks.project_id)}`);
  if (marks.name !== undefined) head.push(`hcp-name: ${oneLine(marks.name)}`);
  const tags =
    marks.tags && Object.keys(marks.tags).length > 0 ? `hcp-tags: ${oneLine(JSON.stringify(marks.tags))}` : '';
  const full = [...head, ...(tags ? [tags] : [])].join('\n');
  if (utf8Bytes(full) <= DESCRIPTION_MAX_BYTES) return full;
  const withoutTags = [...head, ...(tags ? ['hcp-tags: (left out: over the 8 KiB description limit)'] : [])].join('\n');
  if (utf8Bytes(withoutTags) <= DESCRIPTION_MAX_BYTES) return withoutTags;
  return cutToBytes(withoutTags, DESCRIPTION_MAX_BYTES);
}

/** The longest prefix of `text` within `max` UTF-8 bytes, not splitting a character. */
function cutToBytes(text: string, max: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const n = utf8Bytes(ch);
    if (bytes + n > max) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/** The HCP id in a VM description, or undefined. */
export function hcpIdOfDescription(description: unknown): string | undefined {
  if (typeof description !== 'string') return undefined;
  const m = /^hcp-id: (.+)$/m.exec(description);
  return m ? m[1].trim() : undefined;
}

/**
 * The tenant's tags as the description records them: {} when it has no `hcp-tags` line, undefined when
 * they are unknown (left out for the 8 KiB limit, or unreadable).
 */
export function tagsOfDescription(description: unknown): Record<string, string> | undefined {
  if (typeof description !== 'string') return {};
  const m = /^hcp-tags: (.*)$/m.exec(description);
  if (!m) return {};
  try {
    const parsed: unknown = JSON.parse(m[1]);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const entries = Object.entries(parsed as Record<string, unknown>);
    return entries.every(([, v]) => typeof v === 'string') ? (parsed as Record<string, string>) : undefined;
  } catch {
    return undefined;
  }
}

/** The description with other tags, its identifying lines kept; undefined when it names no HCP id. */
export function descriptionWithTags(description: unknown, tags: Record<string, string>): string | undefined {
  const hcpId = hcpIdOfDescription(description);
  if (hcpId === undefined || typeof description !== 'string') return undefined;
  const line = (key: string) => new RegExp(`^${key}: (.*)$`, 'm').exec(description)?.[1];
  return buildDescription({ hcp_id: hcpId, project_id: line('hcp-project'), name: line('hcp-name'), tags });
}

/**
 * The tenant's tags the VM really carries at the provider: those the description records whose token
 * is also in the Proxmox tag list (someone removing a token in the Proxmox UI shows as a difference).
 */
export function providerTagsOf(config: { description?: unknown; tags?: unknown }): Record<string, string> | undefined {
  const recorded = tagsOfDescription(config.description);
  if (!recorded) return undefined;
  const tokens = new Set(parseTags(config.tags));
  return Object.fromEntries(Object.entries(recorded).filter(([k, v]) => tokens.has(tenantTagToken(k, v))));
}

/** ssh keys as Proxmox wants them in `sshkeys`: one per line, URL-encoded (`%20` for spaces, not `+`). */
export function encodeSshKeys(keys: string[]): string {
  return encodeURIComponent(
    keys
      .map((k) => k.trim())
      .filter((k) => k !== '')
      .join('\n'),
  );
}

export function decodeSshKeys(value: unknown): string[] {
  if (typeof value !== 'string' || value === '') return [];
  let text: string;
  try {
    text = decodeURIComponent(value);
  } catch {
    text = value;
  }
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** `memory` is a property string since PVE 8 (`[current=]<MiB>`); the MiB either way. */
export function memoryMiB(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  const entry = parsePropertyString(value).find(([k]) => k === '' || k === 'current');
  return entry && /^\d+$/.test(entry[1]) ? Number(entry[1]) : undefined;
}

/** Whether `agent` (`[enabled=]<1|0>,...`) enables the guest agent. */
export function agentEnabled(value: unknown): boolean {
  if (value === 1 || value === true) return true;
  if (typeof value !== 'string') return false;
  const entry = parsePropertyString(value).find(([k]) => k === '' || k === 'enabled');
  return !!entry && /^(1|on|yes|true)$/i.test(entry[1]);
}
