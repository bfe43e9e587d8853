import { z } from 'zod';
import { ERROR_CODES, type HcpErrorShape } from '@hcp/domain';

/**
 * What HCP asks a host agent to do with its driver: one driver call each (the ProviderDriver SPI, by HCP
 * id), carried over the internal router. HCP's side of a call is a `HostAgentDriver` that queues it for
 * the VM's host and waits for the outcome; the agent claims it, runs it on its local driver (libvirt),
 * renews while it runs and reports the outcome. Every call is idempotent at the driver, so a call run
 * twice (the agent died before reporting) does its work once.
 */
const hcpId = z.string().min(1).max(200);
const tags = z.record(z.string().max(255), z.string().max(1024));

export const createVmSpecSchema = z.object({
  hcp_id: hcpId,
  project_id: z.string().min(1).max(200),
  name: z.string().min(1).max(255),
  image_ref: z.string().min(1).max(1024),
  vcpus: z.number().int().positive(),
  ram_mb: z.number().int().positive(),
  disk_gb: z.number().int().positive(),
  ssh_keys: z.array(z.string().max(16_384)).max(64),
  user_data: z.string().max(65_536).optional(),
  tags,
  power_on: z.boolean(),
  placement_hints: z.record(z.unknown()).optional(),
});

export const hostCallRequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('create'), spec: createVmSpecSchema }),
  z.object({ op: z.literal('start'), hcp_id: hcpId }),
  z.object({ op: z.literal('stop'), hcp_id: hcpId, force: z.boolean() }),
  z.object({ op: z.literal('reboot'), hcp_id: hcpId, force: z.boolean() }),
  z.object({ op: z.literal('delete'), hcp_id: hcpId }),
  z.object({ op: z.literal('describe'), hcp_id: hcpId }),
  z.object({ op: z.literal('list') }),
  z.object({ op: z.literal('update_tags'), hcp_id: hcpId, tags }),
  /** A fresh console endpoint (a new VNC password per session where QEMU supports it). */
  z.object({ op: z.literal('console'), hcp_id: hcpId, type: z.literal('vnc') }),
  z.object({ op: z.literal('check') }),
]);
export type HostCallRequest = z.infer<typeof hostCallRequestSchema>;
export type HostCallOp = HostCallRequest['op'];

const address = z.object({ type: z.enum(['ipv4', 'ipv6']), address: z.string().max(64), nic: z.string().max(64) });
export const vmDescriptionSchema = z.object({
  hcp_id: hcpId,
  power_state: z.enum(['running', 'stopped', 'paused', 'unknown']),
  addresses: z.array(address).max(64),
  provider_ref: z.object({ provider_id: z.string(), cluster_id: z.string() }).passthrough(),
  tags: tags.optional(),
});

/** Where HCP's console proxy connects to reach the VM's VNC server, and the password it asks for. */
export const consoleEndpointSchema = z.object({
  host: z.string().min(1).max(255),
  port: z.number().int().min(1).max(65_535),
  password: z.string().max(64).optional(),
});
export type ConsoleEndpoint = z.infer<typeof consoleEndpointSchema>;

/** The value each op answers with (validated where HCP reads it back: an agent is outside input). */
export const hostCallValueSchemas = {
  create: vmDescriptionSchema,
  start: vmDescriptionSchema,
  stop: vmDescriptionSchema,
  reboot: vmDescriptionSchema,
  delete: z.null(),
  describe: vmDescriptionSchema.nullable(),
  list: z.array(vmDescriptionSchema).max(100_000),
  update_tags: z.null(),
  console: consoleEndpointSchema,
  check: z.null(),
} satisfies Record<HostCallOp, z.ZodTypeAny>;

const errorShape = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string().max(4096),
  retryable: z.boolean(),
  details: z.record(z.unknown()).optional(),
});

/** What an agent reports for a call it ran. */
export const hostCallOutcomeSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('succeeded'), value: z.unknown() }),
  z.object({ status: z.literal('failed'), error: errorShape }),
]);
export type HostCallOutcome = { status: 'succeeded'; value: unknown } | { status: 'failed'; error: HcpErrorShape };

/** A call as an agent claims it: its id, what to do, until when, and how long its lease lasts. */
export interface ClaimedHostCall {
  call_id: string;
  request: HostCallRequest;
  /** The caller gives up at this time; the agent aborts the driver call then. */
  deadline: string;
  lease_ms: number;
  /** This call was claimed before and its lease ran out (the agent died or hung mid-call). */
  reclaimed: boolean;
  trace_id?: string;
}
