/**
 * What a vSphere provider is configured with: the SDK endpoint, a user and password (its TLS trust,
 * a CA and/or a pinned SHA-256 fingerprint, is common/https/tls-trust.ts) and where VMs go (settings of the provider,
 * then the cluster's placement hints; later layers win).
 */
import { invalidField } from '@hcp/domain';
import type { VsphereCredentials } from './vsphere-client';

export interface VsphereSettings {
  /** Datacenter name; the only one when absent. */
  datacenter?: string;
  /** Cluster (compute resource) name under the datacenter; its root resource pool takes the VMs. */
  cluster?: string;
  /** Resource pool: an inventory path, or a path under the datacenter's `host` folder. Wins over `cluster`. */
  resource_pool?: string;
  /** VM folder: an inventory path, or a path under the datacenter's `vm` folder; that folder itself when absent. */
  folder?: string;
  /** Datastore name for the clones' files; the template's datastore when absent. */
  datastore?: string;
  /** How long a graceful stop waits for the guest before powering it off. */
  shutdown_timeout_s: number;
}

const DEFAULTS: VsphereSettings = { shutdown_timeout_s: 60 };
const NAMES = ['datacenter', 'cluster', 'resource_pool', 'folder', 'datastore'] as const;

export function parseVsphereSettings(
  ...layers: Array<Record<string, unknown> | VsphereSettings | undefined>
): VsphereSettings {
  const out: VsphereSettings = { ...DEFAULTS };
  for (const layer of layers) {
    if (!layer) continue;
    const raw = layer as Record<string, unknown>;
    for (const name of NAMES) {
      const v = raw[name];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'string' || v.trim() === '' || v.length > 1024) {
        throw invalidField(`settings.${name}`, `${name} must be a non-empty name or inventory path`);
      }
      out[name] = v;
    }
    const t = raw.shutdown_timeout_s;
    if (t !== undefined && t !== null) {
      if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > 3600) {
        throw invalidField('settings.shutdown_timeout_s', 'shutdown_timeout_s must be an integer from 0 to 3600');
      }
      out.shutdown_timeout_s = t;
    }
  }
  return out;
}

/** `https://vcenter.example.org/sdk` (the path defaults to /sdk); plain http is refused. */
export function parseVsphereEndpoint(raw: unknown): URL {
  let url: URL;
  try {
    url = new URL(String(raw));
  } catch {
    throw invalidField('endpoint', 'endpoint must be an https URL such as https://vcenter.example.org/sdk');
  }
  if (url.protocol !== 'https:') throw invalidField('endpoint', 'endpoint must use https');
  if (url.username || url.password) throw invalidField('endpoint', 'credentials go in credentials, not the endpoint');
  if (url.pathname === '' || url.pathname === '/') url.pathname = '/sdk';
  return url;
}

export function parseVsphereCredentials(raw: unknown): VsphereCredentials {
  const r = (raw ?? {}) as Record<string, unknown>;
  if (typeof r.username !== 'string' || r.username === '') {
    throw invalidField('credentials.username', 'username is required');
  }
  if (typeof r.password !== 'string' || r.password === '') {
    throw invalidField('credentials.password', 'password is required');
  }
  return { username: r.username, password: r.password };
}
