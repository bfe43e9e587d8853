import { HcpError } from '../errors';
import { BooleanCapability, Capabilities, ConsoleType, missingCapabilities } from './capabilities';
import { PlacementPolicy } from './ops-resources';

export interface Resources {
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
}

/** One cluster of the zone as placement sees it. */
export interface PlacementCandidate {
  cluster_id: string;
  provider_id: string;
  enabled: boolean;
  capabilities: Capabilities;
  /** null: no capacity figures registered, so capacity is not a limit. */
  capacity: Resources | null;
  used: Resources;
  /** The image's reference on this cluster, if the image is available there. */
  image_ref: string | undefined;
}

export interface PlacementRequest {
  zone: string;
  resources: Resources;
  requires?: { flags?: BooleanCapability[]; console?: ConsoleType };
}

export interface Placement {
  cluster_id: string;
  provider_id: string;
  image_ref: string;
}

type Rejection = 'disabled' | 'image_not_available' | 'missing_capability' | 'no_free_capacity';

/**
 * Chooses the cluster of a zone for a new VM. Eligible: enabled, holds the image, offers the required
 * capabilities, and has room. `spread` takes the cluster with the most free memory left after placing,
 * `pack` the one with the least (filling clusters one by one). Ties go to the lowest cluster id, so the
 * choice is deterministic. No eligible cluster is an error now, never a job that hangs.
 */
export function place(policy: PlacementPolicy, candidates: PlacementCandidate[], request: PlacementRequest): Placement {
  const rejections = new Map<Rejection, number>();
  const eligible: Array<{ candidate: PlacementCandidate; freeRamAfter: number }> = [];
  const missing = new Set<string>();
  for (const c of [...candidates].sort((a, b) => a.cluster_id.localeCompare(b.cluster_id))) {
    const reason = rejectionOf(c, request, missing);
    if (reason) {
      rejections.set(reason, (rejections.get(reason) ?? 0) + 1);
      continue;
    }
    eligible.push({
      candidate: c,
      freeRamAfter: c.capacity ? c.capacity.ram_mb - c.used.ram_mb - request.resources.ram_mb : Number.MAX_SAFE_INTEGER,
    });
  }
  if (eligible.length === 0) {
    if (missing.size > 0 && rejections.size === 1) {
      throw new HcpError('FEATURE_NOT_SUPPORTED', `zone ${request.zone} does not offer ${[...missing].join(', ')}`, {
        missing: [...missing],
        zone: request.zone,
      });
    }
    // Not retryable at once, but not the caller's fault either: the zone has nowhere to put it now.
    throw new HcpError(
      'PROVIDER_UNAVAILABLE',
      `zone ${request.zone} has no cluster that can take this VM`,
      {
        zone: request.zone,
        reasons: Object.fromEntries(rejections),
      },
      false,
    );
  }
  const pick = eligible.reduce((best, e) =>
    (policy === 'spread' ? e.freeRamAfter > best.freeRamAfter : e.freeRamAfter < best.freeRamAfter) ? e : best,
  );
  return {
    cluster_id: pick.candidate.cluster_id,
    provider_id: pick.candidate.provider_id,
    image_ref: pick.candidate.image_ref!,
  };
}

function rejectionOf(c: PlacementCandidate, request: PlacementRequest, missing: Set<string>): Rejection | null {
  if (!c.enabled) return 'disabled';
  if (!c.image_ref) return 'image_not_available';
  const lacks = missingCapabilities(c.capabilities, request.requires ?? {});
  if (lacks.length > 0) {
    for (const m of lacks) missing.add(m);
    return 'missing_capability';
  }
  if (c.capacity) {
    const r = request.resources;
    if (
      c.used.vcpus + r.vcpus > c.capacity.vcpus ||
      c.used.ram_mb + r.ram_mb > c.capacity.ram_mb ||
      c.used.disk_gb + r.disk_gb > c.capacity.disk_gb
    ) {
      return 'no_free_capacity';
    }
  }
  return null;
}
