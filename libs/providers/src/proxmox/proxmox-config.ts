/**
 * Configuration of a Proxmox VE provider and cluster as HCP stores it (provider `endpoint`,
 * `credentials`, `settings`; cluster `placement_hints`), parsed and checked once so that a bad
 * registration fails at the ops API instead of inside a job. Messages never repeat a secret.
 */
import { invalidField } from '@hcp/domain';

export type ProxmoxCredentials =
  /** API token: `USER@REALM!TOKENID` and its secret (stateless, preferred). */
  | { kind: 'token'; tokenId: string; secret: string }
  /** User and password: ticket auth (cookie + CSRFPreventionToken), renewed before it expires. */
  | { kind: 'password'; username: string; password: string };

/** Placement and VM settings of a cluster: defaults from the provider, overridden per cluster. */
export interface ProxmoxSettings {
  /** Nodes HCP may place VMs on; all online nodes when absent. */
  nodes?: string[];
  /** Target storage of full clones (ignored for linked clones, which stay on the template's storage). */
  storage?: string;
  /** Resource pool new VMs join. */
  pool?: string;
  /** Bridge of net0. */
  bridge: string;
  /** Full clone (independent disks) or linked clone (copy-on-write from the template). */
  full_clone: boolean;
  /** Seconds a graceful shutdown may take before the VM is powered off. */
  shutdown_timeout_s: number;
  /** cloud-init user. */
  ciuser: string;
  /** cloud-init network config of the first NIC. */
  ipconfig0: string;
  /** Disk resized to the flavor's size; the boot disk when absent. */
  disk?: string;
  /**
   * The QEMU guest agent option of every VM HCP creates, whatever its template says (true: `agent: 1`,
   * which describe uses for addresses; false: `agent: 0`).
   */
  guest_agent: boolean;
  /**
   * Seconds create and start wait for the guest agent to report an address (never past the call's
   * deadline). 0 when the templates have no agent, so starts do not wait for nothing.
   */
  address_wait_s: number;
}

export const DEFAULT_PROXMOX_SETTINGS: Readonly<ProxmoxSettings> = Object.freeze({
  bridge: 'vmbr0',
  full_clone: true,
  shutdown_timeout_s: 60,
  ciuser: 'hcp',
  ipconfig0: 'ip=dhcp',
  guest_agent: true,
  address_wait_s: 30,
});

const USERID = /^[^\s:/@!]+@[A-Za-z][A-Za-z0-9.\-_]+$/;
const TOKENID = /^[^\s:/@!]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$/;
const NODE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;
const STORAGE = /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i;
const BRIDGE = /^[-_.\w\d]+$/;
const POOL = /^[A-Za-z0-9_][-A-Za-z0-9_/]*$/;
const DISK = /^(ide|sata|scsi|virtio)\d+$/;

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

/**
 * Accepts `{ token_id: "USER@REALM!TOKENID", token_secret }` (also `secret`), the whole header value
 * `{ api_token: "USER@REALM!TOKENID=SECRET" }` (with or without `PVEAPIToken=`), or
 * `{ username: "USER@REALM", password }` (`realm` may be given apart).
 */
export function parseProxmoxCredentials(raw: unknown): ProxmoxCredentials {
  if (!isRecord(raw)) {
    throw invalidField('credentials', 'credentials must be an object with an API token or a username and password');
  }
  const apiToken = str(raw.api_token);
  if (apiToken) {
    const value = apiToken.replace(/^PVEAPIToken=/, '');
    const eq = value.indexOf('=');
    const tokenId = eq > 0 ? value.slice(0, eq) : '';
    const secret = eq > 0 ? value.slice(eq + 1) : '';
    if (!TOKENID.test(tokenId) || secret === '') {
      throw invalidField('credentials.api_token', 'api_token must look like USER@REALM!TOKENID=SECRET');
    }
    return { kind: 'token', tokenId, secret };
  }
  const tokenId = str(raw.token_id);
  if (tokenId !== undefined) {
    const secret = str(raw.token_secret) ?? str(raw.secret);
    if (!TOKENID.test(tokenId))
      throw invalidField('credentials.token_id', 'token_id must look like USER@REALM!TOKENID');
    if (!secret) throw invalidField('credentials.token_secret', 'token_secret is required with token_id');
    return { kind: 'token', tokenId, secret };
  }
  let username = str(raw.username);
  const password = typeof raw.password === 'string' && raw.password !== '' ? raw.password : undefined;
  if (username !== undefined) {
    const realm = str(raw.realm);
    if (!username.includes('@') && realm) username = `${username}@${realm}`;
    if (!USERID.test(username))
      throw invalidField('credentials.username', 'username must look like USER@REALM (e.g. root@pam)');
    if (!password) throw invalidField('credentials.password', 'password is required with username');
    return { kind: 'password', username, password };
  }
  throw invalidField('credentials', 'credentials need token_id and token_secret, api_token, or username and password');
}

/** `https://host[:port][/api2/json]`; plain http is refused, never downgraded silently. */
export function parseProxmoxEndpoint(raw: unknown): URL {
  const text = str(raw);
  if (!text) throw invalidField('endpoint', 'endpoint is required, e.g. https://pve1.example.org:8006');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidField('endpoint', 'endpoint must be a URL, e.g. https://pve1.example.org:8006');
  }
  if (url.protocol !== 'https:') throw invalidField('endpoint', 'endpoint must use https');
  if (url.username || url.password) throw invalidField('endpoint', 'endpoint must not carry credentials');
  // No port means Proxmox's 8006; an explicit :443 (a reverse proxy) must stay, though URL hides it.
  const explicitPort = /^https:\/\/(?:\[[^\]]*\]|[^/:?#]*)(:\d+)/i.test(text);
  if (!url.port && !explicitPort) url.port = '8006';
  url.pathname = url.pathname.replace(/\/+$/, '').replace(/\/api2\/json$/, '');
  url.search = '';
  url.hash = '';
  return url;
}

/** Merges provider settings and cluster hints (later wins) over the defaults, checking each field. */
export function parseProxmoxSettings(...layers: unknown[]): ProxmoxSettings {
  const out: ProxmoxSettings = { ...DEFAULT_PROXMOX_SETTINGS };
  for (const layer of layers) {
    if (layer === undefined || layer === null) continue;
    if (!isRecord(layer)) throw invalidField('settings', 'settings must be an object');
    const field = (name: string) => `settings.${name}`;
    if (layer.nodes !== undefined) {
      if (
        !Array.isArray(layer.nodes) ||
        layer.nodes.length === 0 ||
        !layer.nodes.every((n) => typeof n === 'string' && NODE.test(n))
      ) {
        throw invalidField(field('nodes'), 'nodes must be a non-empty list of Proxmox node names');
      }
      out.nodes = [...(layer.nodes as string[])];
    }
    if (layer.storage !== undefined) {
      if (typeof layer.storage !== 'string' || !STORAGE.test(layer.storage))
        throw invalidField(field('storage'), 'storage must be a Proxmox storage id');
      out.storage = layer.storage;
    }
    if (layer.pool !== undefined) {
      if (typeof layer.pool !== 'string' || !POOL.test(layer.pool))
        throw invalidField(field('pool'), 'pool must be a Proxmox pool id');
      out.pool = layer.pool;
    }
    if (layer.bridge !== undefined) {
      if (typeof layer.bridge !== 'string' || !BRIDGE.test(layer.bridge))
        throw invalidField(field('bridge'), 'bridge must be a bridge name such as vmbr0');
      out.bridge = layer.bridge;
    }
    if (layer.full_clone !== undefined) {
      if (typeof layer.full_clone !== 'boolean')
        throw invalidField(field('full_clone'), 'full_clone must be true or false');
      out.full_clone = layer.full_clone;
    }
    if (layer.shutdown_timeout_s !== undefined) {
      const v = layer.shutdown_timeout_s;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 3600) {
        throw invalidField(field('shutdown_timeout_s'), 'shutdown_timeout_s must be an integer from 0 to 3600');
      }
      out.shutdown_timeout_s = v;
    }
    if (layer.ciuser !== undefined) {
      if (typeof layer.ciuser !== 'string' || !/^[a-z_][a-z0-9_-]{0,31}$/.test(layer.ciuser)) {
        throw invalidField(field('ciuser'), 'ciuser must be a Unix user name');
      }
      out.ciuser = layer.ciuser;
    }
    if (layer.ipconfig0 !== undefined) {
      if (typeof layer.ipconfig0 !== 'string' || layer.ipconfig0 === '' || /[\r\n]/.test(layer.ipconfig0)) {
        throw invalidField(field('ipconfig0'), 'ipconfig0 must be a Proxmox ipconfig string such as ip=dhcp');
      }
      out.ipconfig0 = layer.ipconfig0;
    }
    if (layer.disk !== undefined) {
      if (typeof layer.disk !== 'string' || !DISK.test(layer.disk))
        throw invalidField(field('disk'), 'disk must be a disk key such as scsi0');
      out.disk = layer.disk;
    }
    if (layer.address_wait_s !== undefined) {
      const v = layer.address_wait_s;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 600) {
        throw invalidField(field('address_wait_s'), 'address_wait_s must be an integer from 0 to 600');
      }
      out.address_wait_s = v;
    }
    if (layer.guest_agent !== undefined) {
      if (typeof layer.guest_agent !== 'boolean')
        throw invalidField(field('guest_agent'), 'guest_agent must be true or false');
      out.guest_agent = layer.guest_agent;
    }
  }
  // A full clone without `storage` lands on the template's storage, as Proxmox itself does.
  return out;
}
