/** Driver options and create specs for the vSphere suites against vcsim's VPX model. */
import { randomUUID } from 'node:crypto';
import type { CreateVmSpec, VsphereDriverOptions } from '@hcp/providers';
import type { Vcsim } from '../../support/vcsim';

export function vsphereOptions(sim: Vcsim, overrides: Partial<VsphereDriverOptions> = {}): VsphereDriverOptions {
  return {
    endpoint: sim.sdkUrl,
    credentials: { username: sim.username, password: sim.password },
    tls: { ca_pem: sim.caPem },
    settings: [{ datacenter: 'DC0', cluster: 'DC0_C0', shutdown_timeout_s: 10 }],
    provider_id: 'prv-vsphere',
    cluster_id: 'cl-vsphere',
    timing: {
      taskPollMinMs: 20,
      taskPollMaxMs: 200,
      retryBaseMs: 50,
      retryMaxMs: 400,
      shutdownPollMs: 50,
      stopMarginMs: 500,
    },
    client: { retryBaseMs: 50 },
    ...overrides,
  };
}

export function vsphereSpec(overrides: Partial<CreateVmSpec> = {}): CreateVmSpec {
  return {
    hcp_id: `vm-${randomUUID()}`,
    project_id: 'prj-1',
    name: 'web-1',
    image_ref: 'DC0_H0_VM0',
    vcpus: 2,
    ram_mb: 2048,
    disk_gb: 20,
    ssh_keys: [],
    tags: { env: 'test' },
    power_on: true,
    ...overrides,
  };
}
