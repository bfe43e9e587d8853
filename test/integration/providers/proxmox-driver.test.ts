/**
 * The Proxmox VE driver against the Proxmox API simulator: the shared driver contract, then what is
 * particular to Proxmox (auth modes, TLS trust, tasks, locks, VMID races, error mapping, the VM's
 * configuration as Proxmox holds it). The simulator checks every request against Proxmox's schema.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { HcpError } from '@hcp/domain';
import { ProxmoxDriver, type CreateVmSpec, type ProxmoxDriverOptions, type ProxmoxTiming } from '@hcp/providers';
import {
  ProxmoxSimulator,
  type ProxmoxSimulatorOptions,
  type SimLatency,
} from '../../simulators/proxmox/proxmox-simulator';
import {
  caught,
  closedStream,
  ctx,
  describeDriverContract,
  readServerInit,
  type DriverContractHarness,
} from './driver-contract';

const FAST: Partial<SimLatency> = { scale: 0.01 };
const TIMING: Partial<ProxmoxTiming> = {
  taskPollMinMs: 5,
  taskPollMaxMs: 40,
  lockRetryBaseMs: 20,
  lockRetryMaxMs: 200,
  stopMarginMs: 200,
  addressPollMs: 20,
};
const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@example.org';
const RSA_KEY =
  'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCznARmjaRMrpijNmA3PAcPioHKBiXi+YgvwryLNInUFfZQGw605IZ9aRXrbdZAIpnVzX/3Bv8JAIu6SKBxWYiC9RTKyp6ZV9k+u99W607mhmByHe/m3DRmSSUAaUfpItpmyQVn1tXLRfXlxGCXTJjgPzGkDn9bHadA8gt74vgseQoRBI7i/+1MZ5jmsY/Pvk8hN4WcpkycQg/4wgEH5+UyFcMPC8+CNR2G0WY7l8RLT/XQoP5OXScs8jhqw3Q0Ek5Yv0YSJsyXty3kdFoZUffRVMCkrpi/qCKP4nfKrExGDepcJTsVXX8elfrsGImdG7slqdQDsMrybGlgGTJGue2R second@example.org';

function specFor(overrides: Partial<CreateVmSpec> = {}): CreateVmSpec {
  return {
    hcp_id: randomUUID(),
    project_id: 'prj-1',
    name: 'web-1',
    image_ref: 'debian-12',
    vcpus: 2,
    ram_mb: 2048,
    disk_gb: 20,
    ssh_keys: [SSH_KEY],
    tags: { env: 'test' },
    power_on: true,
    ...overrides,
  };
}

interface Fixture {
  sim: ProxmoxSimulator;
  url: string;
  caPem: string;
  fingerprint: string;
  token: { tokenId: string; secret: string };
  password: string;
  drivers: ProxmoxDriver[];
  driver(options?: Partial<ProxmoxDriverOptions>): ProxmoxDriver;
}

async function startFixture(
  latency: Partial<SimLatency> = FAST,
  options: Partial<ProxmoxSimulatorOptions> = {},
): Promise<Fixture> {
  const password = `pw-${randomUUID()}`;
  const sim = new ProxmoxSimulator({ latency, users: { 'root@pam': password }, ...options });
  const { url, caPem, fingerprint256 } = await sim.start();
  const token = sim.createToken('hcp@pve', 'hcp');
  const drivers: ProxmoxDriver[] = [];
  return {
    sim,
    url,
    caPem,
    fingerprint: fingerprint256,
    token,
    password,
    drivers,
    driver(options = {}) {
      const d = new ProxmoxDriver({
        endpoint: url,
        credentials: { token_id: token.tokenId, token_secret: token.secret },
        tls: { fingerprint_sha256: fingerprint256 },
        settings: { storage: 'local-lvm', bridge: 'vmbr0', full_clone: true, shutdown_timeout_s: 5, address_wait_s: 3 },
        provider_id: 'prv-proxmox',
        cluster_id: 'cls-proxmox',
        timing: TIMING,
        client: { retryBaseMs: 10, requestTimeoutMs: 5000 },
        ...options,
      });
      drivers.push(d);
      return d;
    },
  };
}

async function stopFixture(f: Fixture | undefined): Promise<void> {
  if (!f) return;
  for (const d of f.drivers) await d.close();
  await f.sim.stop();
}

// -------------------------------------------------------------------------------------------------

describeDriverContract('ProxmoxDriver on the Proxmox simulator', async (): Promise<DriverContractHarness> => {
  const f = await startFixture();
  const driver = f.driver();
  return {
    driver,
    spec: specFor,
    async injectUnavailable() {
      f.sim.addFault({ kind: 'error', status: 503, message: 'Service Unavailable' });
    },
    async injectHang() {
      f.sim.addFault({ kind: 'delay', ms: Infinity });
    },
    async clearFaults() {
      f.sim.clearFaults();
    },
    countVms: async (hcpId) => f.sim.vmsByHcpId(hcpId).length,
    opTimeoutMs: 15_000,
    async close() {
      expect(f.sim.validationFailures).toEqual([]);
      await stopFixture(f);
    },
  };
});

// -------------------------------------------------------------------------------------------------

describe('ProxmoxDriver on the Proxmox simulator', () => {
  let f: Fixture;
  let driver: ProxmoxDriver;
  const op = (ms = 15_000) => ctx(ms);

  beforeAll(async () => {
    f = await startFixture();
    driver = f.driver();
  });

  afterEach(() => {
    f.sim.clearFaults();
  });

  afterAll(async () => {
    await stopFixture(f);
  });

  const onlyVm = (hcpId: string) => {
    const vms = f.sim.vmsByHcpId(hcpId);
    expect(vms).toHaveLength(1);
    return vms[0];
  };
  const requestsSince = (mark: number) => f.sim.requests.slice(mark);
  const clonesSince = (mark: number) =>
    requestsSince(mark).filter((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/clone');

  describe('the VM it creates', () => {
    it('is a full clone configured from the spec: name, tags, cores, memory, cloud-init, net0, description, disk size', async () => {
      const d = f.driver({
        settings: {
          storage: 'local-lvm',
          bridge: 'vmbr7',
          full_clone: true,
          ciuser: 'ops',
          ipconfig0: 'ip=dhcp,ip6=auto',
        },
      });
      const mark = f.sim.requests.length;
      const spec = specFor({
        name: 'Web 1',
        vcpus: 4,
        ram_mb: 4096,
        disk_gb: 25,
        ssh_keys: [SSH_KEY, RSA_KEY],
      });
      const vm = await d.createVm(spec, op());

      const sim = onlyVm(spec.hcp_id);
      expect(vm.provider_ref).toEqual({
        provider_id: 'prv-proxmox',
        cluster_id: 'cls-proxmox',
        node: sim.node,
        vmid: sim.vmid,
      });
      expect(sim.status).toBe('running');
      expect(sim.lock).toBeUndefined();
      expect(sim.name).toBe('web-1');
      expect(sim.tags).toEqual(expect.arrayContaining(['hcp', `hcp-id-${spec.hcp_id}`]));
      expect(sim.config.cores).toBe('4');
      expect(sim.config.memory).toBe('4096');
      expect(sim.config.ciuser).toBe('ops');
      expect(sim.config.ipconfig0).toBe('ip=dhcp,ip6=auto');
      expect(sim.config.agent).toBe('1');
      expect(sim.ssh_keys).toEqual([SSH_KEY, RSA_KEY]);
      // Stored URL-encoded, as Proxmox requires (%20, never +).
      expect(sim.config.sshkeys).toContain('ssh-ed25519%20AAAA');
      expect(sim.config.net0).toMatch(/^virtio=BC:24:11(:[0-9A-F]{2}){3},bridge=vmbr7$/);
      expect(sim.description).toContain(`hcp-id: ${spec.hcp_id}`);
      expect(sim.description).toContain('hcp-project: prj-1');
      expect(sim.hcp_id).toBe(spec.hcp_id);
      expect(sim.disks.scsi0).toBe(25 * 1024 ** 3);
      expect(sim.config.scsi0).toMatch(new RegExp(`^local-lvm:vm-${sim.vmid}-disk-0,`));

      const clone = requestsSince(mark).find((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/clone')!;
      expect(clone.params).toMatchObject({
        vmid: '9000',
        node: 'pve1',
        full: '1',
        storage: 'local-lvm',
        newid: String(sim.vmid),
      });
      await d.deleteVm(spec.hcp_id, op());
    });

    it('is a linked clone on the template storage when the cluster says so', async () => {
      const d = f.driver({ settings: { storage: 'local-lvm', full_clone: false } });
      const mark = f.sim.requests.length;
      const spec = specFor({ power_on: false });
      await d.createVm(spec, op());
      const sim = onlyVm(spec.hcp_id);
      expect(sim.config.scsi0).toMatch(new RegExp(`^local-lvm:base-9000-disk-0/vm-${sim.vmid}-disk-0,`));
      const clone = requestsSince(mark).find((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/clone')!;
      expect(clone.params.full).toBe('0');
      expect(clone.params.storage).toBeUndefined();
      await d.deleteVm(spec.hcp_id, op());
    });

    it('clones a template with local disks on its own node, even onto shared storage and with a freer node', async () => {
      // pve2 has less memory in use than pve1; debian-12 lives on pve1 on local-lvm.
      const d = f.driver({ settings: { storage: 'ceph-vm', full_clone: true } });
      const mark = f.sim.requests.length;
      const spec = specFor({ power_on: false });
      await d.createVm(spec, op());
      expect(onlyVm(spec.hcp_id).node).toBe('pve1');
      const clone = requestsSince(mark).find((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/clone')!;
      expect(clone.status).toBe(200);
      expect(clone.params).toMatchObject({ node: 'pve1', storage: 'ceph-vm' });
      expect(clone.params.target).toBeUndefined();
      await d.deleteVm(spec.hcp_id, op());
    });

    it('clones across nodes only a template whose every volume, cloud-init drive included, is shared', async () => {
      const shared = await startFixture(FAST, {
        templates: [
          { vmid: 9100, name: 'all-shared', node: 'pve1', storage: 'ceph-vm' },
          { vmid: 9101, name: 'cloudinit-local', node: 'pve1', storage: 'ceph-vm', cloudinitStorage: 'local-lvm' },
        ],
      });
      try {
        const d = shared.driver({ settings: { storage: 'ceph-vm', full_clone: true } });
        const onShared = specFor({ power_on: false, image_ref: 'all-shared' });
        const mark = shared.sim.requests.length;
        await d.createVm(onShared, op());
        expect(shared.sim.vmsByHcpId(onShared.hcp_id)[0].node).toBe('pve2');
        const clone = shared.sim.requests.slice(mark).find((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/clone')!;
        expect(clone.params).toMatchObject({ node: 'pve1', target: 'pve2', storage: 'ceph-vm' });

        const ciLocal = specFor({ power_on: false, image_ref: 'cloudinit-local' });
        await d.createVm(ciLocal, op());
        expect(shared.sim.vmsByHcpId(ciLocal.hcp_id)[0].node).toBe('pve1');

        const pinned = shared.driver({ settings: { storage: 'ceph-vm', nodes: ['pve1'] } });
        const onPinned = specFor({ power_on: false, image_ref: 'all-shared' });
        await pinned.createVm(onPinned, op());
        expect(shared.sim.vmsByHcpId(onPinned.hcp_id)[0].node).toBe('pve1');
        expect(shared.sim.requests.filter((r) => r.endpoint?.endsWith('/clone') && r.status !== 200)).toEqual([]);
        expect(shared.sim.validationFailures).toEqual([]);
      } finally {
        await stopFixture(shared);
      }
    });

    it('refuses at once, without retrying, a clone Proxmox refuses for local storage', async () => {
      // A template that placement saw on shared storage but whose cloud-init drive moved to local storage.
      const racing = await startFixture(FAST, {
        templates: [{ vmid: 9100, name: 'all-shared', node: 'pve1', storage: 'ceph-vm' }],
      });
      try {
        const d = racing.driver({ settings: { storage: 'ceph-vm', full_clone: true } });
        racing.sim.addFault({
          kind: 'error',
          status: 500,
          message: "can't clone VM to node 'pve2' (VM uses local storage)",
          method: 'POST',
          path: '/nodes/{node}/qemu/{vmid}/clone',
        });
        const mark = racing.sim.requests.length;
        const err = await caught(d.createVm(specFor({ power_on: false, image_ref: 'all-shared' }), op()));
        expect(err.code).toBe('PROVIDER_UNAVAILABLE');
        expect(err.retryable).toBe(false);
        expect(err.details).toMatchObject({
          provider: { status: 500, message: "can't clone VM to node 'pve2' (VM uses local storage)" },
        });
        expect(racing.sim.requests.slice(mark).filter((r) => r.endpoint?.endsWith('/clone'))).toHaveLength(1);
      } finally {
        await stopFixture(racing);
      }
    });

    it('takes the placement hints of the create over the provider settings', async () => {
      const spec = specFor({ power_on: false, placement_hints: { bridge: 'vmbr9', pool: 'hcp' } });
      await driver.createVm(spec, op());
      const sim = onlyVm(spec.hcp_id);
      expect(sim.config.net0).toMatch(/bridge=vmbr9$/);
      expect(sim.pool).toBe('hcp');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('turns the guest agent off when the settings say guest_agent: false, though the template has agent: 1', async () => {
      const d = f.driver({
        settings: { storage: 'local-lvm', full_clone: true, guest_agent: false, address_wait_s: 3 },
      });
      const spec = specFor();
      const vm = await d.createVm(spec, op());
      const sim = onlyVm(spec.hcp_id);
      expect(sim.config.agent).toBe('0');
      expect(vm.addresses).toEqual([]);
      await d.deleteVm(spec.hcp_id, op());
    });

    it('takes guest_agent: false from the cluster’s settings over the provider’s', async () => {
      const d = f.driver({
        settings: [{ storage: 'local-lvm', full_clone: true, guest_agent: true }, { guest_agent: false }],
      });
      const spec = specFor({ power_on: false });
      await d.createVm(spec, op());
      expect(onlyVm(spec.hcp_id).config.agent).toBe('0');
      await d.deleteVm(spec.hcp_id, op());
    });

    it('turns the guest agent on when the settings want it, though the template has none', async () => {
      const noAgent = await startFixture(FAST, {
        templates: [{ vmid: 9000, name: 'debian-12', node: 'pve1', storage: 'local-lvm', diskGb: 2, agent: false }],
      });
      try {
        const d = noAgent.driver();
        const spec = specFor({ power_on: false });
        expect(noAgent.sim.listVms().find((v) => v.vmid === 9000)?.config.agent).toBeUndefined();
        await d.createVm(spec, op());
        expect(noAgent.sim.vmsByHcpId(spec.hcp_id)[0].config.agent).toBe('1');
        expect(noAgent.sim.validationFailures).toEqual([]);
      } finally {
        await stopFixture(noAgent);
      }
    });

    it('reports the guest agent addresses by NIC', async () => {
      const spec = specFor();
      const vm = await driver.createVm(spec, op());
      const sim = onlyVm(spec.hcp_id);
      expect(vm.addresses).toEqual([{ type: 'ipv4', address: f.sim.guestAddress(sim.vmid), nic: 'net0' }]);
      const described = await driver.describeVm(spec.hcp_id, op());
      expect(described!.addresses).toEqual(vm.addresses);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('is described without addresses while the guest agent does not answer', async () => {
      const spec = specFor({ power_on: false });
      await driver.createVm(spec, op());
      f.sim.setGuest(onlyVm(spec.hcp_id).vmid, { agent: false });
      // Waits for the agent within the call's deadline, then answers without addresses, in time.
      const t0 = Date.now();
      const started = await driver.startVm(spec.hcp_id, ctx(2000));
      expect(started.power_state).toBe('running');
      expect(started.addresses).toEqual([]);
      expect(Date.now() - t0).toBeGreaterThan(500);
      expect(Date.now() - t0).toBeLessThan(2000);
      // A cluster whose templates have no agent does not wait at all.
      await driver.stopVm(spec.hcp_id, true, op());
      const noWait = f.driver({ settings: { storage: 'local-lvm', address_wait_s: 0 } });
      const t1 = Date.now();
      expect((await noWait.startVm(spec.hcp_id, op())).addresses).toEqual([]);
      expect(Date.now() - t1).toBeLessThan(500);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('keeps its MAC address when a create is repeated', async () => {
      const spec = specFor({ power_on: false });
      await driver.createVm(spec, op());
      const mac = onlyVm(spec.hcp_id).config.net0;
      const mark = f.sim.requests.length;
      await driver.createVm(spec, op());
      expect(onlyVm(spec.hcp_id).config.net0).toBe(mac);
      // Nothing to change: no clone, no config write, no resize.
      expect(requestsSince(mark).filter((r) => r.method !== 'GET')).toEqual([]);
      await driver.deleteVm(spec.hcp_id, op());
    });
  });

  describe('idempotency and races', () => {
    it('clones again with a new VMID when the one from nextid is taken before the clone', async () => {
      const fault = f.sim.addFault({
        kind: 'steal-vmid',
        method: 'POST',
        path: '/nodes/{node}/qemu/{vmid}/clone',
        times: 1,
      });
      const spec = specFor({ power_on: false });
      const mark = f.sim.requests.length;
      await driver.createVm(spec, op());
      expect(f.sim.faultHits(fault)).toBe(1);
      const clones = clonesSince(mark);
      expect(clones).toHaveLength(2);
      expect(clones[0].status).toBe(500);
      expect(clones[1].params.newid).not.toBe(clones[0].params.newid);
      expect(onlyVm(spec.hcp_id).vmid).toBe(Number(clones[1].params.newid));
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('finds the clone it started when the answer to the clone call was lost', async () => {
      const fault = f.sim.addFault({
        kind: 'drop-after',
        method: 'POST',
        path: '/nodes/{node}/qemu/{vmid}/clone',
        times: 1,
      });
      const spec = specFor({ power_on: false });
      const vm = await driver.createVm(spec, op());
      expect(f.sim.faultHits(fault)).toBe(1);
      expect(vm.power_state).toBe('stopped');
      const sim = onlyVm(spec.hcp_id);
      expect(sim.name).toBe('web-1');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('finishes on a retry a create that failed after the clone, without cloning again', async () => {
      f.sim.addFault({
        kind: 'error',
        status: 503,
        message: 'Service Unavailable',
        method: 'PUT',
        path: '/nodes/{node}/qemu/{vmid}/config',
      });
      const spec = specFor();
      const err = await caught(driver.createVm(spec, op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      // Half-made: cloned under its marker name, not configured yet.
      expect(onlyVm(spec.hcp_id).name).toBe(`hcp-${spec.hcp_id}`);
      const startRefused = await caught(driver.startVm(spec.hcp_id, op()));
      expect(startRefused.code).toBe('CONFLICT');
      expect(startRefused.retryable).toBe(true);
      f.sim.clearFaults();

      const mark = f.sim.requests.length;
      const vm = await driver.createVm(spec, op());
      expect(vm.power_state).toBe('running');
      expect(clonesSince(mark)).toEqual([]);
      expect(onlyVm(spec.hcp_id).name).toBe('web-1');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('waits for a clone still running from an earlier attempt', async () => {
      const slow = await startFixture({ scale: 0.01, cloneFullMs: 40_000 });
      try {
        const d = slow.driver();
        const spec = specFor({ power_on: false });
        // The first attempt runs out of time while the clone task runs (400 ms of clone).
        const err = await caught(d.createVm(spec, ctx(150)));
        expect(err.code).toBe('PROVIDER_TIMEOUT');
        expect(slow.sim.vmsByHcpId(spec.hcp_id)[0].lock).toBe('clone');
        const vm = await d.createVm(spec, ctx(10_000));
        expect(vm.power_state).toBe('stopped');
        expect(slow.sim.vmsByHcpId(spec.hcp_id)).toHaveLength(1);
        expect(slow.sim.validationFailures).toEqual([]);
      } finally {
        await stopFixture(slow);
      }
    });

    it('does not clone twice when retried while its clone shows nothing but lock: clone', async () => {
      const slow = await startFixture({ scale: 0.01, cloneFullMs: 60_000 });
      try {
        const d = slow.driver();
        const spec = specFor({ power_on: false });
        const err = await caught(d.createVm(spec, ctx(200)));
        expect(err.code).toBe('PROVIDER_TIMEOUT');
        // What Proxmox shows of the clone: a lock, no name, no description, no tags.
        const inProgress = slow.sim.vmsByHcpId(spec.hcp_id)[0];
        expect(inProgress.config).toEqual({ lock: 'clone' });
        const mark = slow.sim.requests.length;
        // Retried inside the lock window, and again after the lock went.
        const retry = await caught(d.createVm(spec, ctx(150)));
        expect(retry.code).toBe('PROVIDER_TIMEOUT');
        const vm = await d.createVm(spec, ctx(10_000));
        expect(vm.power_state).toBe('stopped');
        expect(slow.sim.requests.slice(mark).filter((r) => r.endpoint?.endsWith('/clone'))).toEqual([]);
        expect(slow.sim.vmsByHcpId(spec.hcp_id)).toHaveLength(1);
        expect(slow.sim.vmsByHcpId(spec.hcp_id)[0]).toMatchObject({ vmid: inProgress.vmid, name: 'web-1' });
      } finally {
        await stopFixture(slow);
      }
    });

    it('finds the clone whose answer was lost while it is still in its lock window', async () => {
      const slow = await startFixture({ scale: 0.01, cloneFullMs: 20_000 });
      try {
        const d = slow.driver();
        slow.sim.addFault({ kind: 'drop-after', method: 'POST', path: '/nodes/{node}/qemu/{vmid}/clone', times: 1 });
        const spec = specFor({ power_on: false });
        const vm = await d.createVm(spec, ctx(10_000));
        expect(vm.power_state).toBe('stopped');
        expect(slow.sim.requests.filter((r) => r.endpoint?.endsWith('/clone'))).toHaveLength(1);
        expect(slow.sim.vmsByHcpId(spec.hcp_id)).toHaveLength(1);
      } finally {
        await stopFixture(slow);
      }
    });

    /** A job's CallContext as the worker builds it: the facts of earlier attempts, and a record that keeps them. */
    function jobCall(facts: Record<string, unknown>, ms: number) {
      return {
        ...ctx(ms),
        recorded: { ...facts },
        record: async (key: string, value: unknown) => {
          facts[key] = value;
        },
      };
    }

    it('records the clone’s node and VMID on the job before the clone call is sent', async () => {
      const facts: Record<string, unknown> = {};
      const spec = specFor({ power_on: false });
      let factWhenCloned: unknown;
      const d = f.driver();
      const call = jobCall(facts, 15_000);
      const recordFact = call.record;
      call.record = async (key, value) => {
        await recordFact(key, value);
        factWhenCloned = f.sim.requests.filter((r) => r.endpoint?.endsWith('/clone')).length;
      };
      await d.createVm(spec, call);
      const sim = onlyVm(spec.hcp_id);
      expect(facts).toEqual({ 'proxmox.clone': { node: sim.node, vmid: sim.vmid } });
      expect(factWhenCloned).toBe(f.sim.requests.filter((r) => r.endpoint?.endsWith('/clone')).length - 1);
      await d.deleteVm(spec.hcp_id, op());
    });

    it('sends no clone when the job cannot record it', async () => {
      const spec = specFor({ power_on: false });
      const mark = f.sim.requests.length;
      const refusal = new HcpError('CONFLICT', 'the job is no longer held by this attempt');
      const err = await caught(
        driver.createVm(spec, {
          ...ctx(15_000),
          recorded: {},
          record: async () => {
            throw refusal;
          },
        }),
      );
      expect(err).toBe(refusal);
      expect(requestsSince(mark).filter((r) => r.endpoint?.endsWith('/clone'))).toEqual([]);
      expect(f.sim.vmsByHcpId(spec.hcp_id)).toEqual([]);
    });

    it('retried by a fresh driver with the job’s recorded clone, takes over the clone whose answer was lost instead of cloning again during its lock window', async () => {
      const slow = await startFixture({ scale: 0.01, cloneFullMs: 60_000 });
      try {
        const facts: Record<string, unknown> = {};
        const spec = specFor({ power_on: false });
        slow.sim.addFault({ kind: 'drop-after', method: 'POST', path: '/nodes/{node}/qemu/{vmid}/clone', times: 1 });
        // The first attempt loses the clone's answer, then runs out of time in the lock window.
        const lost = await caught(slow.driver().createVm(spec, jobCall(facts, 250)));
        expect(lost.code).toBe('PROVIDER_TIMEOUT');
        const inProgress = slow.sim.vmsByHcpId(spec.hcp_id)[0];
        expect(inProgress.config).toEqual({ lock: 'clone' });
        expect(facts).toEqual({ 'proxmox.clone': { node: inProgress.node, vmid: inProgress.vmid } });

        // Another process: a new driver, nothing in memory, only what the job recorded.
        const mark = slow.sim.requests.length;
        const fresh = slow.driver();
        const inLockWindow = await caught(fresh.createVm(spec, jobCall(facts, 150)));
        expect(inLockWindow.code).toBe('PROVIDER_TIMEOUT');
        const vm = await slow.driver().createVm(spec, jobCall(facts, 10_000));

        expect(vm.power_state).toBe('stopped');
        expect(slow.sim.requests.slice(mark).filter((r) => r.endpoint?.endsWith('/clone'))).toEqual([]);
        expect(slow.sim.listVms().filter((v) => !v.template)).toHaveLength(1);
        expect(slow.sim.vmsByHcpId(spec.hcp_id)[0]).toMatchObject({ vmid: inProgress.vmid, name: 'web-1' });
        expect(slow.sim.validationFailures).toEqual([]);
      } finally {
        await stopFixture(slow);
      }
    });

    it('deletes, given the failed create’s recorded clone, a clone still in its lock window once its lock goes', async () => {
      const slow = await startFixture({ scale: 0.01, cloneFullMs: 60_000 });
      try {
        const facts: Record<string, unknown> = {};
        const spec = specFor({ power_on: false });
        expect((await caught(slow.driver().createVm(spec, jobCall(facts, 200)))).code).toBe('PROVIDER_TIMEOUT');
        const inProgress = slow.sim.vmsByHcpId(spec.hcp_id)[0];
        expect(inProgress.config).toEqual({ lock: 'clone' });

        // The cleanup of the failed create: a fresh driver, the create job's facts, no record.
        const cleanup = slow.driver();
        const tooSoon = await caught(cleanup.deleteVm(spec.hcp_id, { ...ctx(100), recorded: facts }));
        expect(tooSoon.code).toBe('PROVIDER_TIMEOUT');
        await cleanup.deleteVm(spec.hcp_id, { ...ctx(10_000), recorded: facts });

        expect(slow.sim.listVms().filter((v) => v.vmid === inProgress.vmid)).toEqual([]);
        expect(slow.sim.validationFailures).toEqual([]);
      } finally {
        await stopFixture(slow);
      }
    });

    it('clones again when the recorded clone never reached Proxmox, and records the new one', async () => {
      const spec = specFor({ power_on: false });
      const facts: Record<string, unknown> = { 'proxmox.clone': { node: 'pve1', vmid: 99_999 } };
      await driver.createVm(spec, jobCall(facts, 15_000));
      const sim = onlyVm(spec.hcp_id);
      expect(facts).toEqual({ 'proxmox.clone': { node: sim.node, vmid: sim.vmid } });
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('passes over a recorded VMID that turned out to be another VM, and clones its own', async () => {
      const other = specFor({ power_on: false });
      await driver.createVm(other, op());
      const taken = onlyVm(other.hcp_id);
      const spec = specFor({ power_on: false });
      await driver.createVm(spec, jobCall({ 'proxmox.clone': { node: taken.node, vmid: taken.vmid } }, 15_000));
      expect(onlyVm(spec.hcp_id).vmid).not.toBe(taken.vmid);
      expect(onlyVm(other.hcp_id).vmid).toBe(taken.vmid);
      await driver.deleteVm(spec.hcp_id, op());
      await driver.deleteVm(other.hcp_id, op());
    });

    /** Task status reads refused for a lock: `times` of them, or every one until the faults are cleared. */
    const lockOnStatusReads = (times?: number) =>
      f.sim.addFault({
        kind: 'error',
        status: 500,
        message: "can't lock file '/var/lock/qemu-server/lock.conf' - got timeout",
        method: 'GET',
        path: '/nodes/{node}/tasks/{upid}/status',
        ...(times === undefined ? {} : { times }),
      });

    it('reads a task’s status again when the read meets a lock, and never sends the task’s call twice', async () => {
      const busy = lockOnStatusReads(3);
      const spec = specFor({ power_on: false });
      const mark = f.sim.requests.length;
      await driver.createVm(spec, op());
      expect(f.sim.faultHits(busy)).toBe(3);
      expect(clonesSince(mark)).toHaveLength(1);
      expect(onlyVm(spec.hcp_id).name).toBe('web-1');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('gives up reading a task’s status that stays unreadable at the deadline with PROVIDER_TIMEOUT, and clones once', async () => {
      lockOnStatusReads();
      const spec = specFor({ power_on: false });
      const mark = f.sim.requests.length;
      const err = await caught(driver.createVm(spec, ctx(600)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
      expect(clonesSince(mark)).toHaveLength(1);
      f.sim.clearFaults();
      await driver.createVm(spec, op());
      expect(clonesSince(mark)).toHaveLength(1);
      expect(onlyVm(spec.hcp_id).name).toBe('web-1');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('retries with backoff while the VM is locked, and succeeds when the lock goes', async () => {
      const locked = f.sim.addFault({
        kind: 'error',
        status: 500,
        message: 'VM is locked (backup)',
        method: 'PUT',
        path: '/nodes/{node}/qemu/{vmid}/config',
        times: 2,
      });
      const flock = f.sim.addFault({
        kind: 'task-fail',
        message: "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout",
        method: 'POST',
        path: '/nodes/{node}/qemu/{vmid}/status/start',
        times: 1,
      });
      const spec = specFor();
      const vm = await driver.createVm(spec, op());
      expect(vm.power_state).toBe('running');
      expect(f.sim.faultHits(locked)).toBe(2);
      expect(f.sim.faultHits(flock)).toBe(1);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('gives up on a lock that outlasts the deadline with PROVIDER_TIMEOUT', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      f.sim.lockVm(onlyVm(spec.hcp_id).vmid, 'backup', 5000);
      const started = Date.now();
      const err = await caught(driver.stopVm(spec.hcp_id, true, ctx(600)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
      expect(err.details).toMatchObject({ reason: 'locked', provider: { message: 'VM is locked (backup)' } });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(onlyVm(spec.hcp_id).status).toBe('running');
    });
  });

  describe('power', () => {
    it('powers off a guest that ignores the shutdown request after the graceful timeout', async () => {
      const d = f.driver({ settings: { storage: 'local-lvm', shutdown_timeout_s: 1 } });
      const spec = specFor();
      await d.createVm(spec, op());
      f.sim.setGuest(onlyVm(spec.hcp_id).vmid, { acpi: false });
      const mark = f.sim.requests.length;
      const started = Date.now();
      const vm = await d.stopVm(spec.hcp_id, false, op());
      expect(vm.power_state).toBe('stopped');
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      const writes = requestsSince(mark)
        .filter((r) => r.method === 'POST')
        .map((r) => r.endpoint);
      expect(writes).toEqual(['/nodes/{node}/qemu/{vmid}/status/shutdown', '/nodes/{node}/qemu/{vmid}/status/stop']);
      expect(requestsSince(mark).find((r) => r.endpoint?.endsWith('/shutdown'))!.params.timeout).toBe('1');
      await d.deleteVm(spec.hcp_id, op());
    });

    it('stops by force without asking the guest', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      const mark = f.sim.requests.length;
      await driver.stopVm(spec.hcp_id, true, op());
      expect(
        requestsSince(mark)
          .filter((r) => r.method === 'POST')
          .map((r) => r.endpoint),
      ).toEqual(['/nodes/{node}/qemu/{vmid}/status/stop']);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('reboots with reboot, and resets when forced', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      const mark = f.sim.requests.length;
      await driver.rebootVm(spec.hcp_id, false, op());
      await driver.rebootVm(spec.hcp_id, true, op());
      expect(
        requestsSince(mark)
          .filter((r) => r.method === 'POST')
          .map((r) => r.endpoint),
      ).toEqual(['/nodes/{node}/qemu/{vmid}/status/reboot', '/nodes/{node}/qemu/{vmid}/status/reset']);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('deletes a running VM after asking the guest to shut down, with purge and destroy-unreferenced-disks', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      const mark = f.sim.requests.length;
      await driver.deleteVm(spec.hcp_id, op());
      const writes = requestsSince(mark).filter((r) => r.method !== 'GET');
      expect(writes.map((r) => `${r.method} ${r.endpoint}`)).toEqual([
        'POST /nodes/{node}/qemu/{vmid}/status/shutdown',
        'DELETE /nodes/{node}/qemu/{vmid}',
      ]);
      expect(writes[0].params).toMatchObject({ timeout: '5', forceStop: '1' });
      expect(writes[1].params).toMatchObject({ purge: '1', 'destroy-unreferenced-disks': '1' });
      expect(f.sim.vmsByHcpId(spec.hcp_id)).toEqual([]);
    });

    it('deletes a VM whose guest ignores the shutdown request: Proxmox powers it off at the timeout', async () => {
      const d = f.driver({ settings: { storage: 'local-lvm', shutdown_timeout_s: 1 } });
      const spec = specFor();
      await d.createVm(spec, op());
      f.sim.setGuest(onlyVm(spec.hcp_id).vmid, { acpi: false });
      const mark = f.sim.requests.length;
      await d.deleteVm(spec.hcp_id, op());
      expect(
        requestsSince(mark)
          .filter((r) => r.method !== 'GET')
          .map((r) => `${r.method} ${r.endpoint}`),
      ).toEqual(['POST /nodes/{node}/qemu/{vmid}/status/shutdown', 'DELETE /nodes/{node}/qemu/{vmid}']);
      expect(f.sim.vmsByHcpId(spec.hcp_id)).toEqual([]);
    });

    it('deletes with a hard stop at once when the cluster allows no shutdown time', async () => {
      const d = f.driver({ settings: { storage: 'local-lvm', shutdown_timeout_s: 0 } });
      const spec = specFor();
      await d.createVm(spec, op());
      const mark = f.sim.requests.length;
      await d.deleteVm(spec.hcp_id, op());
      expect(
        requestsSince(mark)
          .filter((r) => r.method !== 'GET')
          .map((r) => `${r.method} ${r.endpoint}`),
      ).toEqual(['POST /nodes/{node}/qemu/{vmid}/status/stop', 'DELETE /nodes/{node}/qemu/{vmid}']);
    });
  });

  describe('errors', () => {
    it('reports a failed task with its exit status and log for ops', async () => {
      f.sim.addFault({
        kind: 'task-fail',
        message: 'start failed: QEMU exited with code 1',
        method: 'POST',
        path: '/nodes/{node}/qemu/{vmid}/status/start',
      });
      const spec = specFor();
      const err = await caught(driver.createVm(spec, op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.message).toBe('the provider failed to start the VM');
      expect(err.details).toMatchObject({
        provider: {
          task: 'qmstart',
          message: 'start failed: QEMU exited with code 1',
          log: ['TASK ERROR: start failed: QEMU exited with code 1'],
        },
      });
      // The tenant-facing message names no node or VMID.
      expect(err.message).not.toMatch(/pve\d|\b\d{3,}\b/);
      f.sim.clearFaults();
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('maps 5xx answers to a retryable PROVIDER_UNAVAILABLE after retrying reads', async () => {
      const fault = f.sim.addFault({
        kind: 'error',
        status: 503,
        message: 'Service Unavailable',
        method: 'GET',
        path: '/cluster/resources',
      });
      const err = await caught(driver.describeVm(randomUUID(), op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.retryable).toBe(true);
      expect(err.details).toMatchObject({
        provider: { status: 503, message: 'Service Unavailable', operation: 'GET /cluster/resources' },
      });
      // Three tries of an idempotent read.
      expect(f.sim.faultHits(fault)).toBe(3);
    });

    it('reads the message from the reason phrase of servers that put it nowhere else', async () => {
      const legacy = new ProxmoxSimulator({ latency: FAST, legacyErrors: true });
      const { url, fingerprint256 } = await legacy.start();
      try {
        const token = legacy.createToken();
        legacy.addFault({
          kind: 'error',
          status: 500,
          message: "can't lock file '/var/lock/qemu-server/lock-203.conf' - got timeout",
          path: '/cluster/resources',
        });
        const d = new ProxmoxDriver({
          endpoint: url,
          credentials: { api_token: token.header },
          tls: { fingerprint_sha256: fingerprint256 },
          timing: TIMING,
        });
        const err = await caught(d.describeVm(randomUUID(), op()));
        expect(err.details).toMatchObject({
          provider: { status: 500, message: "can't lock file '/var/lock/qemu-server/lock-203.conf' - got timeout" },
        });
        await d.close();
      } finally {
        await legacy.stop();
      }
    });

    it('ends a slow answer at the deadline with PROVIDER_TIMEOUT', async () => {
      f.sim.addFault({ kind: 'delay', ms: 3000, path: '/cluster/resources' });
      const started = Date.now();
      const err = await caught(driver.describeVm(randomUUID(), ctx(300)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
      expect(err.details).toMatchObject({ reason: 'deadline' });
      expect(Date.now() - started).toBeLessThan(1500);
    });

    it('retries a read whose connection was dropped, but never a write', async () => {
      const read = f.sim.addFault({ kind: 'drop', method: 'GET', path: '/cluster/resources', times: 1 });
      expect(await driver.describeVm(randomUUID(), op())).toBeNull();
      expect(f.sim.faultHits(read)).toBe(1);

      const spec = specFor({ power_on: false });
      await driver.createVm(spec, op());
      const write = f.sim.addFault({ kind: 'drop', method: 'POST', path: '/nodes/{node}/qemu/{vmid}/status/start' });
      const err = await caught(driver.startVm(spec.hcp_id, op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.retryable).toBe(true);
      expect(f.sim.faultHits(write)).toBe(1);
      f.sim.clearFaults();
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('maps an unreachable endpoint to PROVIDER_UNAVAILABLE', async () => {
      const port = await closedPort();
      const d = f.driver({ endpoint: `https://127.0.0.1:${port}` });
      const err = await caught(d.describeVm(randomUUID(), op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.retryable).toBe(true);
      expect(err.details).toMatchObject({ provider: { reason: 'ECONNREFUSED' } });
    });

    it('maps a refused ssh key to a non-retryable INVALID_REQUEST with Proxmox’s reason for ops', async () => {
      // HCP's API refuses such keys first; a key Proxmox's ssh-keygen still refuses must not be retried.
      const spec = specFor({ power_on: false, ssh_keys: [SSH_KEY.replace('ssh-ed25519', 'ssh-rsa')] });
      const err = await caught(driver.createVm(spec, op()));
      expect(err.code).toBe('INVALID_REQUEST');
      expect(err.retryable).toBe(false);
      expect(err.details).toMatchObject({
        provider: {
          status: 500,
          message: 'SSH public key validation error',
          operation: expect.stringContaining('config'),
        },
      });
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('keeps transient refusals retryable: a lock past the deadline, a 503, a failed task', async () => {
      f.sim.addFault({ kind: 'error', status: 500, message: 'VM is locked (backup)', method: 'POST', times: 50 });
      const locked = await caught(driver.createVm(specFor({ power_on: false }), ctx(300)));
      expect(locked.retryable).toBe(true);
      f.sim.clearFaults();
      f.sim.addFault({ kind: 'error', status: 503, message: 'Service Unavailable', method: 'POST', times: 1 });
      const unavailable = await caught(driver.createVm(specFor({ power_on: false }), op()));
      expect(unavailable).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: true });
    });

    it('never sends Proxmox a description over 8 KiB: tags that do not fit are left out', async () => {
      const tags = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`key-${i}`, 'v'.repeat(250)]));
      const spec = specFor({ power_on: false, tags });
      await driver.createVm(spec, op());
      const vm = onlyVm(spec.hcp_id);
      expect(Buffer.byteLength(vm.description!)).toBeLessThanOrEqual(8192);
      expect(vm.hcp_id).toBe(spec.hcp_id);
      expect(vm.description).toContain('hcp-tags: (left out');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('answers a missing template with a non-retryable INVALID_REQUEST naming the image', async () => {
      const spec = specFor({ image_ref: 'windows-3.11' });
      const err = await caught(driver.createVm(spec, op()));
      expect(err.code).toBe('INVALID_REQUEST');
      expect(err.retryable).toBe(false);
      expect(err.message).toBe('the image is not available on this cluster (no template matches its reference)');
      expect(err.details).toEqual({ provider: { image_ref: 'windows-3.11' } });
      expect(f.sim.vmsByHcpId(spec.hcp_id)).toEqual([]);
    });

    it('refuses user_data with FEATURE_NOT_SUPPORTED before cloning anything', async () => {
      const spec = specFor({ user_data: '#cloud-config\n' });
      const err = await caught(driver.createVm(spec, op()));
      expect(err.code).toBe('FEATURE_NOT_SUPPORTED');
      expect(f.sim.vmsByHcpId(spec.hcp_id)).toEqual([]);
    });

    it('refuses bad provider configuration at construction with INVALID_REQUEST', () => {
      const build = (o: Partial<ProxmoxDriverOptions>) => () =>
        new ProxmoxDriver({ endpoint: f.url, credentials: { api_token: 'a@pve!tok=c' }, ...o });
      expect(build({ endpoint: 'http://127.0.0.1:8006' })).toThrow(/https/);
      expect(build({ credentials: { token_id: 'nobody', token_secret: 'x' } })).toThrow(HcpError);
      expect(build({ tls: { fingerprint_sha256: 'abc' } })).toThrow(/fingerprint/);
      expect(build({ settings: { full_clone: 'yes' } })).toThrow(/full_clone/);
    });
  });

  describe('authentication', () => {
    it('sends the API token on every call and no CSRF token', async () => {
      const mark = f.sim.requests.length;
      const spec = specFor({ power_on: false });
      await driver.createVm(spec, op());
      const seen = requestsSince(mark);
      expect(seen.length).toBeGreaterThan(3);
      expect(seen.every((r) => r.auth === 'token' && !r.csrf)).toBe(true);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('logs in with a ticket, sends CSRFPreventionToken on writes, and renews the ticket before it expires', async () => {
      const d = f.driver({
        credentials: { username: 'root@pam', password: f.password },
        client: { retryBaseMs: 10, ticketRenewAfterMs: 300 },
      });
      const before = { ...f.sim.stats };
      const mark = f.sim.requests.length;
      const spec = specFor({ power_on: false });
      await d.createVm(spec, op());
      const seen = requestsSince(mark).filter((r) => r.endpoint !== '/access/ticket');
      expect(seen.every((r) => r.auth === 'ticket')).toBe(true);
      expect(seen.filter((r) => r.method !== 'GET').every((r) => r.csrf)).toBe(true);
      expect(f.sim.stats.passwordLogins - before.passwordLogins).toBe(1);

      await new Promise((r) => setTimeout(r, 400));
      await d.startVm(spec.hcp_id, op());
      expect(f.sim.stats.ticketRenewals - before.ticketRenewals).toBe(1);
      expect(f.sim.stats.passwordLogins - before.passwordLogins).toBe(1);
      expect(f.sim.stats.csrfRejected).toBe(before.csrfRejected);
      await d.deleteVm(spec.hcp_id, op());
    });

    it('logs in again when the server no longer accepts its ticket', async () => {
      const d = f.driver({ credentials: { username: 'root', realm: 'pam', password: f.password } });
      expect(await d.describeVm(randomUUID(), op())).toBeNull();
      const before = f.sim.stats.passwordLogins;
      f.sim.revokeTickets();
      expect(await d.describeVm(randomUUID(), op())).toBeNull();
      expect(f.sim.stats.passwordLogins).toBe(before + 1);
    });

    it('maps refused credentials to a non-retryable PROVIDER_UNAVAILABLE', async () => {
      const badToken = f.driver({ credentials: { token_id: f.token.tokenId, token_secret: 'wrong-secret-value' } });
      const err = await caught(badToken.describeVm(randomUUID(), op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.retryable).toBe(false);
      expect(err.details).toMatchObject({ provider: { status: 401 } });

      const badPassword = f.driver({ credentials: { username: 'root@pam', password: 'not-the-password' } });
      const err2 = await caught(badPassword.describeVm(randomUUID(), op()));
      expect(err2.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err2.retryable).toBe(false);
    });

    it('never puts credentials or tickets into errors', async () => {
      const ticketDriver = f.driver({ credentials: { username: 'root@pam', password: f.password } });
      await ticketDriver.describeVm(randomUUID(), op());
      const secrets = [f.token.secret, f.password];
      const errors: HcpError[] = [];
      // A server that echoes what it got: the secret must still not come out.
      f.sim.addFault({
        kind: 'error',
        status: 500,
        message: `bad header PVEAPIToken=${f.token.tokenId}=${f.token.secret}`,
        path: '/cluster/resources',
        times: 1,
      });
      errors.push(await caught(driver.describeVm(randomUUID(), op())));
      f.sim.addFault({
        kind: 'error',
        status: 500,
        message: `password ${f.password} rejected`,
        path: '/cluster/resources',
        times: 1,
      });
      errors.push(await caught(ticketDriver.describeVm(randomUUID(), op())));
      f.sim.clearFaults();
      errors.push(
        await caught(
          f
            .driver({
              credentials: { token_id: f.token.tokenId, token_secret: f.token.secret },
              tls: { fingerprint_sha256: '00'.repeat(32) },
            })
            .describeVm(randomUUID(), op()),
        ),
      );
      errors.push(
        await caught(
          f
            .driver({ credentials: { username: 'root@pam', password: `${f.password}x` } })
            .describeVm(randomUUID(), op()),
        ),
      );
      const tickets = f.sim.requests.filter((r) => r.endpoint === '/access/ticket').length;
      expect(tickets).toBeGreaterThan(0);
      for (const err of errors) {
        const text = `${err.message} ${JSON.stringify(err.details)} ${JSON.stringify(err.toShape())}`;
        for (const secret of secrets) expect(text).not.toContain(secret);
        expect(text).not.toMatch(/PVE:root@pam:[0-9A-F]{8}::/);
      }
      expect(JSON.stringify(errors[0].details)).toContain('PVEAPIToken=***');
      expect(JSON.stringify(errors[1].details)).toContain('password *** rejected');
    });
  });

  describe('TLS', () => {
    it('trusts the server through a given CA', async () => {
      const d = f.driver({ tls: { ca_pem: f.caPem } });
      expect(await d.describeVm(randomUUID(), op())).toBeNull();
    });

    it('trusts the server through a pinned fingerprint, in any spelling', async () => {
      const d = f.driver({ tls: { fingerprint_sha256: f.fingerprint.replace(/:/g, '').toLowerCase() } });
      expect(await d.describeVm(randomUUID(), op())).toBeNull();
    });

    it('refuses a server whose certificate does not match the pin, before sending anything', async () => {
      const mark = f.sim.requests.length;
      const d = f.driver({ tls: { fingerprint_sha256: `${'AB:'.repeat(31)}AB` } });
      const err = await caught(d.describeVm(randomUUID(), op()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.retryable).toBe(false);
      expect(err.details).toMatchObject({ provider: { reason: 'FINGERPRINT_MISMATCH' } });
      expect(f.sim.requests.length).toBe(mark);
    });

    it('refuses a server signed by another CA, and one with no trust configured (never silently insecure)', async () => {
      const other = new ProxmoxSimulator({ latency: FAST });
      const { caPem: otherCa } = await other.start();
      await other.stop();
      const mark = f.sim.requests.length;
      const wrongCa = await caught(f.driver({ tls: { ca_pem: otherCa } }).describeVm(randomUUID(), op()));
      expect(wrongCa.code).toBe('PROVIDER_UNAVAILABLE');
      expect(wrongCa.retryable).toBe(false);
      const noTrust = await caught(f.driver({ tls: {} }).describeVm(randomUUID(), op()));
      expect(noTrust.code).toBe('PROVIDER_UNAVAILABLE');
      expect(noTrust.details).toMatchObject({ provider: { reason: expect.stringMatching(/CERT|SIGNATURE|ISSUER/) } });
      expect(f.sim.requests.length).toBe(mark);
    });
  });

  describe('consoles and connectivity', () => {
    it('opens a VNC console on a running VM: an RFB stream that takes the password vncproxy answered', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      const mark = f.sim.requests.length;
      const vnc = await driver.openConsole(spec.hcp_id, 'vnc', op());
      expect(vnc).toMatchObject({ protocol: 'rfb', rfb_password: expect.stringMatching(/^[!-~]{8}$/) });
      expect(vnc.rfb_password).not.toMatch(/PVEVNC/);
      // generate-password is deprecated: PVE 9 answers a password without being asked.
      const proxy = requestsSince(mark).find((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/vncproxy')!;
      expect(proxy.params['generate-password']).toBeUndefined();
      const vmid = f.sim.vmsByHcpId(spec.hcp_id)[0].vmid;
      expect(await readServerInit(vnc)).toEqual({ width: 320, height: 200, name: `VM ${vmid}` });
      expect(f.sim.openConsoleConnections(vmid)).toBe(1);
      const web = await driver.openConsole(spec.hcp_id, 'webconsole', op());
      expect(web.rfb_password).not.toBe(vnc.rfb_password);
      web.stream.destroy();
      // The console ends when the VM stops.
      const closed = closedStream(vnc.stream);
      await driver.stopVm(spec.hcp_id, true, op());
      await closed;
      expect((await caught(driver.openConsole(spec.hcp_id, 'vnc', op()))).code).toBe('CONFLICT');
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('uses the ticket as VNC password only with a Proxmox that answers no password', async () => {
      const legacy = await startFixture(FAST, { vncPasswords: false });
      try {
        const d = legacy.driver();
        const spec = specFor();
        await d.createVm(spec, op());
        const vnc = await d.openConsole(spec.hcp_id, 'vnc', op());
        expect(vnc.rfb_password).toMatch(/^PVEVNC:/);
        await readServerInit(vnc);
        vnc.stream.destroy();
      } finally {
        await stopFixture(legacy);
      }
    });

    it('opens the websocket on the node whose vncproxy task holds the port', async () => {
      const spec = specFor({ image_ref: 'ubuntu-24.04' });
      await driver.createVm(spec, op());
      expect(onlyVm(spec.hcp_id).node).toBe('pve2');
      const vnc = await driver.openConsole(spec.hcp_id, 'vnc', op());
      await readServerInit(vnc);
      vnc.stream.destroy();
      const upgrade = f.sim.requests.filter((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/vncwebsocket').pop()!;
      expect(upgrade.path).toMatch(/\/nodes\/pve2\/qemu\//);
      expect(upgrade.status).toBe(101);
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('opens the websocket as the identity that asked for the ticket, with ticket login and CA trust too', async () => {
      const byPassword = f.driver({
        credentials: { username: 'root@pam', password: f.password },
        tls: { ca_pem: f.caPem },
      });
      const spec = specFor();
      await byPassword.createVm(spec, op());
      const console = await byPassword.openConsole(spec.hcp_id, 'vnc', op());
      await readServerInit(console);
      console.stream.destroy();
      const upgrade = f.sim.requests.filter((r) => r.endpoint === '/nodes/{node}/qemu/{vmid}/vncwebsocket').pop();
      expect(upgrade).toMatchObject({ status: 101, auth: 'ticket' });
      await byPassword.deleteVm(spec.hcp_id, op());
    });

    it('refuses spice and rdp consoles: HCP relays only RFB', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      for (const type of ['spice', 'rdp'] as const) {
        const err = await caught(driver.openConsole(spec.hcp_id, type, op()));
        expect(err.code).toBe('FEATURE_NOT_SUPPORTED');
        expect(err.details).toEqual({ capability: 'console', console_type: type });
      }
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('maps a refused or failed upgrade to the taxonomy without the ticket in the error', async () => {
      const spec = specFor();
      await driver.createVm(spec, op());
      const path = '/nodes/{node}/qemu/{vmid}/vncwebsocket';
      f.sim.addFault({ kind: 'error', status: 500, message: 'unable to connect to VM console', path, times: 1 });
      const refused = await caught(driver.openConsole(spec.hcp_id, 'vnc', op()));
      expect(refused.code).toBe('PROVIDER_UNAVAILABLE');
      f.sim.addFault({ kind: 'drop', path, times: 1 });
      const dropped = await caught(driver.openConsole(spec.hcp_id, 'vnc', op()));
      expect(dropped.code).toBe('PROVIDER_UNAVAILABLE');
      f.sim.addFault({ kind: 'delay', ms: Infinity, path, times: 1 });
      const hung = await caught(driver.openConsole(spec.hcp_id, 'vnc', ctx(1500)));
      expect(hung.code).toBe('PROVIDER_TIMEOUT');
      const tickets = f.sim.vncTickets();
      expect(tickets.length).toBeGreaterThanOrEqual(3);
      for (const err of [refused, dropped, hung]) {
        const text = JSON.stringify({ message: err.message, details: err.details, stack: err.stack });
        for (const ticket of tickets) {
          expect(text).not.toContain(ticket);
          expect(text).not.toContain(encodeURIComponent(ticket));
        }
        expect(text).not.toContain(f.token.secret);
      }
      await driver.deleteVm(spec.hcp_id, op());
    });

    it('checks connectivity, credentials and the cluster nodes', async () => {
      await driver.checkConnectivity(op());
      await f.driver({ credentials: { username: 'root@pam', password: f.password } }).checkConnectivity(op());
      const unknownNode = await caught(f.driver({ settings: { nodes: ['pve1', 'pve9'] } }).checkConnectivity(op()));
      expect(unknownNode.code).toBe('INVALID_REQUEST');
      expect(unknownNode.message).toContain('pve9');
      const refused = await caught(
        f.driver({ credentials: { api_token: `${f.token.tokenId}=nope` } }).checkConnectivity(op()),
      );
      expect(refused.code).toBe('PROVIDER_UNAVAILABLE');
    });

    it('declares exactly what it does end to end, and does each thing it declares', async () => {
      const caps = driver.capabilities();
      // The SPI has no snapshot or resize call: a driver cannot honestly offer them.
      expect(caps).toEqual({
        console_types: ['vnc', 'webconsole'],
        reboot: true,
        graceful_stop: true,
        snapshots: false,
        resize: false,
        guest_agent_addresses: true,
        provider_tags: true,
      });
      const spec = specFor();
      const created = await driver.createVm(spec, op());
      if (caps.guest_agent_addresses) expect(created.addresses.length).toBeGreaterThan(0);
      if (caps.provider_tags) {
        await driver.updateTags!(spec.hcp_id, { env: 'prod' }, op());
        const vm = onlyVm(spec.hcp_id);
        expect(vm.tags).toEqual(expect.arrayContaining(['hcp', 'env.prod']));
        expect((await driver.describeVm(spec.hcp_id, op()))!.tags).toEqual({ env: 'prod' });
      }
      const mark = f.sim.requests.length;
      if (caps.reboot) expect((await driver.rebootVm(spec.hcp_id, false, op())).power_state).toBe('running');
      for (const type of caps.console_types) {
        const console = await driver.openConsole(spec.hcp_id, type, op());
        await readServerInit(console);
        console.stream.destroy();
      }
      if (caps.graceful_stop) expect((await driver.stopVm(spec.hcp_id, false, op())).power_state).toBe('stopped');
      const writes = requestsSince(mark)
        .filter((r) => r.method === 'POST')
        .map((r) => r.endpoint);
      expect(writes).toEqual([
        '/nodes/{node}/qemu/{vmid}/status/reboot',
        ...caps.console_types.map(() => '/nodes/{node}/qemu/{vmid}/vncproxy'),
        '/nodes/{node}/qemu/{vmid}/status/shutdown',
      ]);
      await driver.deleteVm(spec.hcp_id, op());
    });
  });

  it('sent only requests that Proxmox’s schema accepts', () => {
    expect(f.sim.validationFailures).toEqual([]);
    expect(f.sim.requests.filter((r) => r.status === 501)).toEqual([]);
  });
});

function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
