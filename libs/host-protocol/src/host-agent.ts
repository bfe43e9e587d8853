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
