/**
 * What is particular to vSphere, against vcsim: the session (relogin after NotAuthenticated), the
 * clone's idempotency (a lost answer, a VM of our name that is not ours), task faults retried or not
 * by their kind, TLS trust by pinned thumbprint, and guest addresses from VMware Tools' guest.net.
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_TASK_TIMING, VsphereDriver, moref, morefOf, runTask, writeExtraConfig } from '@hcp/providers';
import { describeWithVcsim, startVcsim, type Vcsim } from '../../support/vcsim';
import { caught, ctx } from './driver-contract';
import { vsphereOptions, vsphereSpec } from './vsphere-driver-fixtures';

const op = () => ctx(30_000);

describeWithVcsim('vSphere driver (vcsim)', () => {
  let sim: Vcsim;
  let driver: VsphereDriver;
  const others: VsphereDriver[] = [];

  const countCalls = async (method: string) => (await sim.calls())[method] ?? 0;
  const vmsOf = async (hcpId: string) => (await sim.inventory()).filter((vm) => vm.extra_config['hcp.id'] === hcpId);

  beforeAll(async () => {
    sim = await startVcsim();
    driver = new VsphereDriver(vsphereOptions(sim));
  });

  afterEach(async () => {
    await sim.clearFaults();
  });

  afterAll(async () => {
    await driver?.close();
    for (const d of others) await d.close();
    await sim?.stop();
  });

  it('logs in again once when vCenter answers NotAuthenticated (session expired) and finishes the call', async () => {
    await driver.checkConnectivity(op());
    const logins = driver.client.stats.logins;
    await sim.injectFault('CreateContainerView', 'NotAuthenticated', 1);
    expect(await driver.describeVm(`vm-${randomUUID()}`, op())).toBeNull();
    expect(driver.client.stats.logins).toBe(logins + 1);
  });

  it('fails PROVIDER_UNAVAILABLE, not retryable, when the password is refused', async () => {
    const wrong = new VsphereDriver(
      vsphereOptions(sim, { credentials: { username: sim.username, password: 'wrong' } }),
    );
    others.push(wrong);
    const before = await countCalls('Login');
    const err = await caught(wrong.checkConnectivity(op()));
    expect([err.code, err.retryable]).toEqual(['PROVIDER_UNAVAILABLE', false]);
    expect(await countCalls('Login')).toBe(before + 1);
  });

  it('refuses settings naming a cluster vCenter does not have with INVALID_REQUEST on that setting', async () => {
    const misplaced = new VsphereDriver(
      vsphereOptions(sim, { settings: [{ datacenter: 'DC0', cluster: 'NO_SUCH_CLUSTER' }] }),
    );
    others.push(misplaced);
    const err = await caught(misplaced.checkConnectivity(op()));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.details).toEqual({ fields: [expect.objectContaining({ field: 'settings.cluster' })] });
    const create = await caught(misplaced.createVm(vsphereSpec(), op()));
    expect([create.code, create.retryable]).toEqual(['PROVIDER_UNAVAILABLE', false]);
  });

  /**
   * What an earlier attempt sent before its answer was lost: vCenter cloned, HCP never heard. (vcsim
   * drops a clone spec's config, so the clone carries no HCP keys: only its name says whose it is.)
   */
  async function cloneWithLostAnswer(hcpId: string): Promise<void> {
    const c = op();
    const { searchIndex } = await driver.client.serviceContent(c);
    const find = async (inventoryPath: string) =>
      morefOf((await driver.client.call('FindByInventoryPath', searchIndex, { inventoryPath }, c)) as never);
    const template = (await sim.inventory()).find((v) => v.name === 'DC0_H0_VM0')!;
    await runTask(
      driver.client,
      'CloneVM_Task',
      moref('VirtualMachine', template.moref),
      {
        folder: await find('DC0/vm'),
        name: `hcp-${hcpId}`,
        spec: { location: { pool: await find('DC0/host/DC0_C0/Resources') }, template: false, powerOn: false },
      },
      DEFAULT_TASK_TIMING,
      c,
    );
  }

  const named = async (hcpId: string) => (await sim.inventory()).filter((v) => v.name === `hcp-${hcpId}`);

  it('adopts the clone of an earlier attempt whose answer was lost, making no second VM', async () => {
    const spec = vsphereSpec({ power_on: false });
    await cloneWithLostAnswer(spec.hcp_id);
    const clones = await countCalls('CloneVM_Task');
    const vm = await driver.createVm(spec, op());
    expect(vm.power_state).toBe('stopped');
    expect(await countCalls('CloneVM_Task')).toBe(clones);
    const vms = await named(spec.hcp_id);
    expect(vms).toHaveLength(1);
    expect(vms[0]).toMatchObject({ num_cpu: 2, memory_mb: 2048, extra_config: { 'hcp.id': spec.hcp_id } });
    await driver.deleteVm(spec.hcp_id, op());
  });

  it('deletes the clone of a create whose answer was lost, though it never got its HCP keys', async () => {
    const spec = vsphereSpec({ power_on: false });
    await cloneWithLostAnswer(spec.hcp_id);
    expect(await named(spec.hcp_id)).toHaveLength(1);
    await driver.deleteVm(spec.hcp_id, op());
    expect(await named(spec.hcp_id)).toEqual([]);
  });

  it('ends a create whose clone call gets no answer with PROVIDER_TIMEOUT, and its retry makes one VM', async () => {
    const spec = vsphereSpec({ power_on: false });
    await sim.hang('CloneVM_Task', 1);
    expect((await caught(driver.createVm(spec, ctx(1500)))).code).toBe('PROVIDER_TIMEOUT');
    // Released, the held clone may still run (vcsim serves it when it has not noticed the client left).
    await sim.clearFaults();
    await driver.createVm(spec, op());
    expect(await named(spec.hcp_id)).toHaveLength(1);
    await driver.deleteVm(spec.hcp_id, op());
    expect(await named(spec.hcp_id)).toEqual([]);
  });

  it('makes one VM from two processes cloning the same HCP id at once: the second clone meets DuplicateName and adopts', async () => {
    const second = new VsphereDriver(vsphereOptions(sim));
    others.push(second);
    const spec = vsphereSpec({ power_on: false });
    const clones = await countCalls('CloneVM_Task');
    // Both look the VM up before either clone runs.
    await sim.setDelay('CloneVM_Task', 500);
    const [a, b] = await Promise.all([driver.createVm(spec, op()), second.createVm(spec, op())]);
    expect(await countCalls('CloneVM_Task')).toBe(clones + 2);
    expect(a.provider_ref).toEqual(b.provider_ref);
    expect(await vmsOf(spec.hcp_id)).toHaveLength(1);
    await driver.deleteVm(spec.hcp_id, op());
  });

  it('resets a guest without tools on a graceful reboot and powers it off on a graceful stop', async () => {
    const spec = vsphereSpec();
    await driver.createVm(spec, op());
    const resets = await countCalls('ResetVM_Task');
    await sim.injectFault('RebootGuest', 'ToolsUnavailable', 1);
    expect((await driver.rebootVm(spec.hcp_id, false, op())).power_state).toBe('running');
    expect(await countCalls('ResetVM_Task')).toBe(resets + 1);
    const powerOffs = await countCalls('PowerOffVM_Task');
    await sim.injectFault('ShutdownGuest', 'ToolsUnavailable', 1);
    expect((await driver.stopVm(spec.hcp_id, false, op())).power_state).toBe('stopped');
    expect(await countCalls('PowerOffVM_Task')).toBe(powerOffs + 1);
    await driver.deleteVm(spec.hcp_id, op());
  });

  it('refuses with CONFLICT to adopt a VM of its name that carries another HCP id, and leaves it alone', async () => {
    const spec = vsphereSpec({ power_on: false });
    const made = await driver.createVm(spec, op());
    // Somebody gives that VM another HCP id in vCenter: it is no longer ours, whatever its name.
    const other = `vm-${randomUUID()}`;
    await writeExtraConfig(driver.client, made.provider_ref.moref as string, { 'hcp.id': other }, op());
    const err = await caught(driver.createVm(spec, op()));
    expect(err.code).toBe('CONFLICT');
    const named = (await sim.inventory()).filter((v) => v.name === `hcp-${spec.hcp_id}`);
    expect(named.map((v) => v.extra_config['hcp.id'])).toEqual([other]);
    await driver.deleteVm(other, op());
  });

  it('retries a power task refused with TaskInProgress and succeeds', async () => {
    const spec = vsphereSpec({ power_on: false });
    await driver.createVm(spec, op());
    const before = await countCalls('PowerOnVM_Task');
    await sim.injectFault('PowerOnVM_Task', 'TaskInProgress', 1);
    expect((await driver.startVm(spec.hcp_id, op())).power_state).toBe('running');
    expect(await countCalls('PowerOnVM_Task')).toBe(before + 2);
    await driver.deleteVm(spec.hcp_id, op());
  });

  it('does not retry a deterministic fault (InvalidDatastore on the clone) and makes no VM', async () => {
    const spec = vsphereSpec();
    const before = await countCalls('CloneVM_Task');
    await sim.injectFault('CloneVM_Task', 'InvalidDatastore');
    const err = await caught(driver.createVm(spec, op()));
    expect([err.code, err.retryable]).toEqual(['PROVIDER_UNAVAILABLE', false]);
    expect(await countCalls('CloneVM_Task')).toBe(before + 1);
    expect(await vmsOf(spec.hcp_id)).toHaveLength(0);
  });

  it('refuses a vCenter whose certificate does not match the pinned thumbprint, before sending credentials', async () => {
    const pinned = new VsphereDriver(vsphereOptions(sim, { tls: { fingerprint_sha256: 'ab'.repeat(32) } }));
    others.push(pinned);
    const logins = await countCalls('Login');
    const err = await caught(pinned.checkConnectivity(op()));
    expect([err.code, err.retryable]).toEqual(['PROVIDER_UNAVAILABLE', false]);
    expect(await countCalls('Login')).toBe(logins);
    const right = new VsphereDriver(vsphereOptions(sim, { tls: { fingerprint_sha256: sim.thumbprintSha256 } }));
    others.push(right);
    await right.checkConnectivity(op());
  });

  it('reports the guest IPs VMware Tools puts in guest.net, and none once stopped', async () => {
    const spec = vsphereSpec();
    const created = await driver.createVm(spec, op());
    // vcsim's way to let the guest report an address (extraConfig SET.guest.ipAddress).
    await writeExtraConfig(
      driver.client,
      created.provider_ref.moref as string,
      { 'SET.guest.ipAddress': '10.20.30.40' },
      op(),
    );
    const described = await driver.describeVm(spec.hcp_id, op());
    expect(described!.addresses).toEqual([expect.objectContaining({ type: 'ipv4', address: '10.20.30.40' })]);
    expect((await driver.stopVm(spec.hcp_id, true, op())).addresses).toEqual([]);
    await driver.deleteVm(spec.hcp_id, op());
  });
});
