/**
 * The vSphere driver against vcsim (govmomi's vCenter simulator, test/support/vcsim.ts): the driver
 * contract every provider passes. "Unavailable" is a vCenter address that refuses connections; "hang"
 * holds every SOAP call the driver makes without an answer.
 */
import net from 'node:net';
import { VsphereDriver } from '@hcp/providers';
import { describeWithVcsim, startVcsim } from '../../support/vcsim';
import { describeDriverContract, type DriverContractHarness } from './driver-contract';
import { vsphereOptions, vsphereSpec } from './vsphere-driver-fixtures';

const HUNG_METHODS = ['RetrieveServiceContent', 'Login', 'CreateContainerView', 'RetrievePropertiesEx'];

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
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
