/**
 * The vSphere driver against vcsim (govmomi's vCenter simulator, test/support/vcsim.ts): the driver
 * contract every provider passes. "Unavailable" is a vCenter address that refuses connections; "hang"
 * holds every SOAP call the driver makes without an answer.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { type CreateVmSpec, VsphereDriver, type VsphereDriverOptions } from '@hcp/providers';
import { describeWithVcsim, startVcsim, type Vcsim } from '../../support/vcsim';
import { describeDriverContract, type DriverContractHarness } from './driver-contract';

const HUNG_METHODS = ['RetrieveServiceContent', 'Login', 'CreateContainerView', 'RetrievePropertiesEx'];

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

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

describeWithVcsim('vSphere driver contract (vcsim)', () => {
  describeDriverContract('vsphere', async (): Promise<DriverContractHarness> => {
    const sim = await startVcsim();
    const working = new VsphereDriver(vsphereOptions(sim));
    const down = new VsphereDriver(vsphereOptions(sim, { endpoint: `https://127.0.0.1:${await closedPort()}/sdk` }));
    let current: VsphereDriver = working;
    return {
      get driver() {
        return current;
      },
      spec: vsphereSpec,
      async injectUnavailable() {
        current = down;
      },
      async injectHang() {
        for (const method of HUNG_METHODS) await sim.hang(method);
      },
      async clearFaults() {
        current = working;
        await sim.clearFaults();
      },
      async countVms(hcpId) {
        return (await sim.inventory()).filter((vm) => vm.extra_config['hcp.id'] === hcpId).length;
      },
      opTimeoutMs: 30_000,
      async close() {
        await working.close();
        await down.close();
        await sim.stop();
      },
    };
  });
});
