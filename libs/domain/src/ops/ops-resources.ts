import { conflict, invalidField, notFound } from '../errors';
import { DomainEvent } from '../events/domain-event';

/**
 * What ops register: providers, clusters, zones, images and flavors. Each is an aggregate with its own
 * stream (`<kind>-<id>`) and three facts: registered, updated (with the whole new spec), deleted. The
 * specs are plain data; what a whole spec must satisfy is `checkOpsSpec` (pure, below) and the commands'
 * checks (references, names, the driver's reading of settings).
 */
export const OPS_KINDS = ['provider', 'cluster', 'zone', 'image', 'flavor'] as const;
export type OpsKind = (typeof OPS_KINDS)[number];

export const PROVIDER_TYPES = ['proxmox', 'vsphere', 'libvirt', 'hyperv', 'simulator'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];
export type PlacementPolicy = 'spread' | 'pack';

export interface ProviderSpec {
  name: string;
  type: ProviderType;
  endpoint: string | null;
  tls: { ca_pem?: string; fingerprint_sha256?: string };
  settings: Record<string, unknown>;
  /** Whether write-only credentials are stored (they live sealed outside the event store). */
  has_credentials: boolean;
}

export interface ClusterSpec {
  name: string;
  provider_id: string;
  placement_hints: Record<string, unknown>;
  capacity: { vcpus: number; ram_mb: number; disk_gb: number } | null;
  enabled: boolean;
  /** Narrowing of the driver's capabilities for this cluster (only `false` / subsets take effect). */
  capabilities: Record<string, unknown>;
}

export interface ZoneSpec {
  name: string;
  cluster_ids: string[];
  policy: PlacementPolicy;
}

export interface ImageSpec {
  name: string;
  os: string;
  min_disk_gb: number;
  min_ram_mb: number;
  visibility: 'public' | 'private';
  /** cluster id -> template or image reference on that cluster's provider. Internal. */
  provider_refs: Record<string, string>;
}

export interface FlavorSpec {
  name: string;
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
  extras: Record<string, unknown>;
}

export interface OpsSpecs {
  provider: ProviderSpec;
  cluster: ClusterSpec;
  zone: ZoneSpec;
  image: ImageSpec;
  flavor: FlavorSpec;
}

type Pascal<K extends OpsKind> = Capitalize<K>;
export type OpsResourceRegistered<K extends OpsKind = OpsKind> = DomainEvent<
  `${Pascal<K>}Registered`,
  { id: string; spec: OpsSpecs[K] }
>;
export type OpsResourceUpdated<K extends OpsKind = OpsKind> = DomainEvent<
  `${Pascal<K>}Updated`,
  { id: string; spec: OpsSpecs[K] }
>;
export type OpsResourceDeleted<K extends OpsKind = OpsKind> = DomainEvent<`${Pascal<K>}Deleted`, { id: string }>;
export type OpsResourceEvent<K extends OpsKind = OpsKind> =
  | OpsResourceRegistered<K>
  | OpsResourceUpdated<K>
  | OpsResourceDeleted<K>;

export const OPS_EVENT_VERSIONS: Record<string, number> = Object.fromEntries(
  OPS_KINDS.flatMap((kind) => ['Registered', 'Updated', 'Deleted'].map((fact) => [`${pascal(kind)}${fact}`, 1])),
);

export interface OpsResourceState<K extends OpsKind = OpsKind> {
  kind: K;
  id: string;
  spec: OpsSpecs[K];
  deleted: boolean;
  created_at: string;
  updated_at: string;
}

export const opsStreamId = (kind: OpsKind, id: string) => `${kind}-${id}`;
export const OPS_STREAM_PREFIXES = OPS_KINDS.map((k) => `${k}-`);

/** The kind an ops event or stream belongs to. */
export function opsKindOf(streamId: string): OpsKind | null {
  return OPS_KINDS.find((k) => streamId.startsWith(`${k}-`)) ?? null;
}

export function evolveOpsResource<K extends OpsKind>(kind: K) {
  return (state: OpsResourceState<K> | null, event: OpsResourceEvent<K>, at: string): OpsResourceState<K> | null => {
    const fact = event.type.slice(pascal(kind).length);
    if (fact === 'Registered')
      return {
        kind,
        id: event.data.id,
        spec: (event as OpsResourceRegistered<K>).data.spec,
        deleted: false,
        created_at: at,
        updated_at: at,
      };
    if (!state) return null;
    if (fact === 'Updated') return { ...state, spec: (event as OpsResourceUpdated<K>).data.spec, updated_at: at };
    return { ...state, deleted: true, updated_at: at };
  };
}

export type OpsCommand<K extends OpsKind> =
  | { type: 'register'; id: string; spec: OpsSpecs[K] }
  | { type: 'update'; spec: OpsSpecs[K] }
  | { type: 'delete' };

export function decideOpsResource<K extends OpsKind>(
  kind: K,
  state: OpsResourceState<K> | null,
  command: OpsCommand<K>,
): OpsResourceEvent<K>[] {
  const type = (fact: string) => `${pascal(kind)}${fact}` as never;
  if (command.type === 'register') {
    if (state) throw conflict(`${kind} ${command.id} already exists`);
    return [
      { type: type('Registered'), version: 1, data: { id: command.id, spec: command.spec } } as OpsResourceEvent<K>,
    ];
  }
  if (!state || state.deleted) throw notFound(kind);
  if (command.type === 'update')
    return [{ type: type('Updated'), version: 1, data: { id: state.id, spec: command.spec } } as OpsResourceEvent<K>];
  return [{ type: type('Deleted'), version: 1, data: { id: state.id } } as OpsResourceEvent<K>];
}

function pascal<K extends OpsKind>(kind: K): Pascal<K> {
  return `${kind[0].toUpperCase()}${kind.slice(1)}` as Pascal<K>;
}

const MAX_ENDPOINT_LENGTH = 2048;

/**
 * What a whole ops spec must satisfy beyond its shape, whichever request produced it. A create checks
 * the spec it was given, an update the spec it would store (the current spec with the patch merged in),
 * so no update can store what a create would refuse. Checks that need I/O (references, names, the
 * driver's reading of settings) are the commands'; this is the pure part, run again on the spec decided
 * on the stream. Throws INVALID_REQUEST naming the field.
 */
export function checkOpsSpec<K extends OpsKind>(kind: K, spec: OpsSpecs[K]): OpsSpecs[K] {
  if (kind === 'provider') checkProviderSpec(spec as ProviderSpec);
  return spec;
}

function checkProviderSpec(spec: ProviderSpec): void {
  if (spec.endpoint !== null) checkEndpoint(spec.endpoint);
}

/**
 * A provider endpoint is https and carries no credentials: the endpoint is stored in events and
 * returned by GET, while credentials live sealed apart; plain http would send them in the clear.
 */
function checkEndpoint(endpoint: string): void {
  if (endpoint.length > MAX_ENDPOINT_LENGTH)
    throw invalidField('endpoint', `endpoint must be at most ${MAX_ENDPOINT_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw invalidField('endpoint', 'endpoint must be a URL, e.g. https://pve1.example.org:8006');
  }
  if (url.protocol !== 'https:') throw invalidField('endpoint', 'endpoint must use https');
  // `@` before the host is userinfo even when URL parsing left username empty (`https://:pw@host`).
  if (url.username || url.password || /^https:\/\/[^/?#]*@/i.test(endpoint))
    throw invalidField('endpoint', 'endpoint must not carry credentials; give them in `credentials`');
  if (!url.hostname) throw invalidField('endpoint', 'endpoint must name a host');
}
