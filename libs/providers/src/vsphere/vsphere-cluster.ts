/** What every vSphere use case works with: the client, the settings, timings and where results are reported. */
import type { VsphereClient } from './vsphere-client';
import type { VsphereSettings } from './vsphere-config';
import type { TaskTiming } from './vsphere-tasks';

export interface VsphereTiming extends TaskTiming {
  /** Poll interval while waiting for a guest to shut down. */
  shutdownPollMs: number;
  /** Time kept before the deadline for the power-off behind a graceful stop. */
  stopMarginMs: number;
}

export const DEFAULT_VSPHERE_TIMING: VsphereTiming = {
  taskPollMinMs: 100,
  taskPollMaxMs: 2000,
  retryBaseMs: 250,
  retryMaxMs: 4000,
  shutdownPollMs: 1000,
  stopMarginMs: 5000,
};

export interface VsphereCluster {
  client: VsphereClient;
  settings: VsphereSettings;
  timing: VsphereTiming;
  providerId: string;
  clusterId: string;
}
