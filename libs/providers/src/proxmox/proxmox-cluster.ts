/**
 * What every step of the Proxmox driver's use cases works with: the cluster (its API client, the
 * provider settings, the ids that go into provider_ref) and the driver's timings.
 */
import type { ProxmoxClient } from './proxmox-client';
import type { ProxmoxSettings } from './proxmox-config';

export interface ProxmoxTiming {
  /** First and longest interval between task status polls. */
  taskPollMinMs: number;
  taskPollMaxMs: number;
  /** First and longest wait between tries of an operation refused by a lock. */
  lockRetryBaseMs: number;
  lockRetryMaxMs: number;
  /** Tries of clone when its VMID keeps being taken. */
  vmidAttempts: number;
  /** Kept free before the deadline when sizing a graceful shutdown, so the hard stop still fits. */
  stopMarginMs: number;
  /** Timeout of a guest agent call (the agent itself waits up to ~8 s). */
  agentTimeoutMs: number;
  /** Interval of the guest agent polls while create and start wait for an address (settings.address_wait_s). */
  addressPollMs: number;
}

export const DEFAULT_PROXMOX_TIMING: Readonly<ProxmoxTiming> = Object.freeze({
  taskPollMinMs: 200,
  taskPollMaxMs: 2000,
  lockRetryBaseMs: 1000,
  lockRetryMaxMs: 10_000,
  vmidAttempts: 5,
  stopMarginMs: 5000,
  agentTimeoutMs: 10_000,
  addressPollMs: 1000,
});

export interface ProxmoxCluster {
  readonly client: ProxmoxClient;
  /** The provider's settings; a create works with its own, which add the placement hints. */
  readonly settings: ProxmoxSettings;
  readonly timing: ProxmoxTiming;
  readonly providerId: string;
  readonly clusterId: string;
  /**
   * The VMIDs this process sent clone calls for, by HCP id, until the VM is configured or deleted: a
   * clone in progress carries nothing else that ties it to its HCP id (see proxmox-create.ts).
   */
  readonly startedClones: Map<string, Array<{ node: string; vmid: number }>>;
}
