/** The driver contract against the simulator driver (its "hypervisor" is a table in PostgreSQL). */
import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import {
  SimulatorDriver,
  SimulatorFaults,
  SimulatorState,
  simulatorLatency,
  type ProviderDriver,
} from '@hcp/providers';
import { describeDriverContract, type DriverContractHarness } from './driver-contract';

const DATABASE_URL = process.env.HCP_TEST_DATABASE_URL ?? 'postgres://hcp:hcp@127.0.0.1:5432/hcp_test';
const OPERATIONS = ['create', 'start', 'stop', 'reboot', 'delete', 'describe', 'console'];

describeDriverContract('SimulatorDriver', async (): Promise<DriverContractHarness> => {
  const pool = new Pool({ connectionString: DATABASE_URL, max: 8 });
  const state = new SimulatorState(pool, `sim_contract_${randomBytes(6).toString('hex')}`);
  await state.install();
  const make = (faults = '') =>
    new SimulatorDriver({
      state,
      latency: simulatorLatency({ scale: 0 }),
      faults: SimulatorFaults.parse(faults),
      clusterId: 'cluster-contract',
      providerId: 'provider-contract',
    });
  let driver: ProviderDriver = make();
  return {
    get driver() {
      return driver;
    },
    spec: (overrides = {}) => ({
      hcp_id: `vm-${randomUUID()}`,
      project_id: 'prj-contract',
      name: 'contract-vm',
      image_ref: 'tmpl-debian-12',
      vcpus: 1,
      ram_mb: 512,
      disk_gb: 10,
      ssh_keys: [],
      tags: {},
      power_on: true,
      ...overrides,
    }),
    async injectUnavailable() {
      driver = make(OPERATIONS.map((o) => `${o}=fail:PROVIDER_UNAVAILABLE`).join(','));
    },
    async injectHang() {
      driver = make(OPERATIONS.map((o) => `${o}=timeout`).join(','));
    },
    async clearFaults() {
      driver = make();
    },
    countVms: (hcpId) => state.countByHcpId(hcpId),
    opTimeoutMs: 10_000,
    async close() {
      await state.drop();
      await pool.end();
    },
  };
});
