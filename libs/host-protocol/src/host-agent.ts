import { z } from 'zod';

/**
 * The internal router's paths (served under HCP's base URL, or on HCP_INTERNAL_PORT) and the bodies a
 * host agent sends. One place for both sides: HCP's controllers and the agent's client.
 */
export const INTERNAL_PREFIX = '/internal/v1';

/** A host credential is shown once, at enrollment or rotation; HCP keeps only its digest. */
export const HOST_CREDENTIAL_PREFIX = 'hcph_';
/** A bootstrap token, created by ops for one cluster: usable once, short-lived. */
export const BOOTSTRAP_TOKEN_PREFIX = 'hcpb_';

export const hostCapacitySchema = z.object({
  vcpus: z.number().int().nonnegative(),
  ram_mb: z.number().int().nonnegative(),
  /** Memory not taken by running guests or the host itself, as the host sees it now. */
  free_ram_mb: z.number().int().nonnegative(),
  disk_gb: z.number().int().nonnegative().optional(),
  free_disk_gb: z.number().int().nonnegative().optional(),
});
export type HostCapacity = z.infer<typeof hostCapacitySchema>;

export const enrollRequestSchema = z.object({
  token: z.string().min(1).max(512),
  /** The host's stable identity (its machine id or FQDN): a retried enrollment must present the same. */
  identity: z.string().min(1).max(255),
  hostname: z.string().min(1).max(255),
  agent_version: z.string().max(64).optional(),
});
export type EnrollRequest = z.infer<typeof enrollRequestSchema>;

export interface EnrollResponse {
  host_id: string;
  cluster_id: string;
  credential: string;
}

export const heartbeatSchema = z.object({
  capacity: hostCapacitySchema,
  /** Provider type the agent drives (libvirt) and the driver's declared capabilities. */
  driver: z.string().min(1).max(64),
  capabilities: z.record(z.unknown()),
  agent_version: z.string().max(64).optional(),
  /** Guests the host runs now (count), for ops. */
  guests: z.number().int().nonnegative().optional(),
});
export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** Who a verified host credential belongs to: what the internal guard attaches to a request. */
export interface HostPrincipal {
  host_id: string;
  cluster_id: string;
  identity: string;
}

/**
 * The internal routes. Every one but `enroll` authenticates with `Authorization: Bearer <host credential>`;
 * errors come in the public API's envelope (`{ error: { code, message, retryable, details } }`).
 *
 * - `POST enroll` EnrollRequest → 201 EnrollResponse (401 for a bad, used or expired token; 409 when the
 *   token enrolled another identity)
 * - `POST heartbeat` Heartbeat → 204
 * - `POST calls/claim` ClaimRequest → 200 `{ calls: ClaimedHostCall[] }` (long poll: answers at once when
 *   a call is due, else after `wait_ms` with none)
 * - `POST calls/:id/renew` → 200 `{ lease_ms }`; 409 CONFLICT when this host no longer holds the call
 * - `POST calls/:id/outcome` HostCallOutcome → 204; 409 CONFLICT when this host no longer holds the call
 */
export const INTERNAL_ROUTES = {
  enroll: `${INTERNAL_PREFIX}/enroll`,
  heartbeat: `${INTERNAL_PREFIX}/heartbeat`,
  claim: `${INTERNAL_PREFIX}/calls/claim`,
  renew: (callId: string) => `${INTERNAL_PREFIX}/calls/${encodeURIComponent(callId)}/renew`,
  outcome: (callId: string) => `${INTERNAL_PREFIX}/calls/${encodeURIComponent(callId)}/outcome`,
} as const;

export const claimRequestSchema = z.object({
  /** How long HCP may hold the request open waiting for a call (long poll), at most 30 s. */
  wait_ms: z.number().int().min(0).max(30_000).default(20_000),
  /** How many calls the agent takes at once (its free slots). */
  max: z.number().int().min(1).max(32).default(4),
});
export type ClaimRequest = z.input<typeof claimRequestSchema>;
