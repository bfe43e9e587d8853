/**
 * What only libvirt does, proved on real QEMU booting the test guest: ACPI stop and reboot are the
 * guest's own doing (and a guest that ignores ACPI is powered off or reset instead), a repeated create
 * makes one domain and one disk, delete keeps the base image, a failed create leaves no disk, and the
 * console is QEMU's own VNC server behind a per-session password.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import {
  LibvirtDriver,
  RfbHandshakeError,
  StreamByteReader,
  connectRfbServer,
  serialLogPath,
  type CreateVmSpec,
} from '@hcp/providers';
import {
  LIBVIRT_URI,
  describeWithLibvirt,
  domainExists,
  domainStateReason,
  ensureTestGuest,
  removeTestVm,
  virshOut,
  volumeExists,
  type TestGuest,
} from '../../support/libvirt-guest';
import { caught, ctx } from './driver-contract';

// Slow-ish: guests boot under TCG (5 s on an idle machine, 20-30 s on a busy one). The suite takes
// about 1-2.5 minutes; each step may take longer than the default 120 s on a loaded CI machine.
jest.setTimeout(300_000);

const OP_MS = 120_000;
const op = () => ctx(OP_MS);

/** The guest's serial output so far (its banner, acpid's lines, the kernel's). */
async function serialLog(hcpId: string): Promise<string> {
  return readFile(serialLogPath(`hcp-${hcpId}`), 'utf8').catch(() => '');
}

const count = (text: string, what: string) => text.split(what).length - 1;

/** Waits until the guest has printed its ready line `times` times (a boot each; slow under TCG). */
async function guestReady(hcpId: string, times = 1): Promise<void> {
  const until = Date.now() + 180_000;
  while (count(await serialLog(hcpId), 'HCP test guest ready') < times) {
    if (Date.now() > until) throw new Error(`the guest did not boot:\n${(await serialLog(hcpId)).slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function rawConnect(host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

describeWithLibvirt('LibvirtDriver on real QEMU', () => {
  let guest: TestGuest;
  let driver: LibvirtDriver;
  const made = new Set<string>();

  const spec = (overrides: Partial<CreateVmSpec> = {}): CreateVmSpec => {
    const s: CreateVmSpec = {
      hcp_id: `vm-${randomUUID()}`,
      project_id: 'prj-libvirt',
      name: 'libvirt-vm',
      image_ref: guest.image_ref,
      vcpus: 1,
      ram_mb: 96,
      disk_gb: 1,
      ssh_keys: [],
      tags: { suite: 'libvirt' },
      power_on: true,
      ...overrides,
    };
    made.add(s.hcp_id);
    return s;
  };

  beforeAll(async () => {
    guest = await ensureTestGuest();
    driver = new LibvirtDriver({
      uri: LIBVIRT_URI,
      pool: guest.pool,
      provider_id: 'provider-libvirt',
      cluster_id: 'cluster-libvirt',
      shutdown_timeout_ms: 60_000,
    });
  });

  afterAll(async () => {
    for (const id of made) await removeTestVm(guest.pool, id);
  });

  describe('a guest that answers ACPI', () => {
    let vm: CreateVmSpec;

    beforeAll(async () => {
      vm = spec();
      await driver.createVm(vm, op());
      await guestReady(vm.hcp_id);
    });

    it('serves its console on QEMU VNC, with a password good for one session', async () => {
      const first = await driver.consoleEndpoint(vm.hcp_id, op());
      const raw = await rawConnect(first.host, first.port);
      const reader = new StreamByteReader(raw);
      expect((await reader.read(12)).toString('latin1')).toBe('RFB 003.008\n');
      reader.release();
      raw.destroy();

      const session = await driver.openConsole(vm.hcp_id, 'vnc', op());
      expect(session.rfb_password).toBeDefined();
      await connectRfbServer(session.stream, { password: session.rfb_password, timeoutMs: 10_000 });
      const rfb = new StreamByteReader(session.stream);
      session.stream.write(Buffer.from([1]));
      const init = await rfb.read(24);
      const [width, height] = [init.readUInt16BE(0), init.readUInt16BE(2)];
      expect(width).toBeGreaterThan(0);
      await rfb.read(init.readUInt32BE(20));
      // FramebufferUpdateRequest (non-incremental, whole screen): the server answers FramebufferUpdate.
      const request = Buffer.alloc(10);
      request.writeUInt8(3, 0);
      request.writeUInt16BE(width, 6);
      request.writeUInt16BE(height, 8);
      session.stream.write(request);
      const update = await rfb.read(4);
      expect(update.readUInt8(0)).toBe(0);
      expect(update.readUInt16BE(2)).toBeGreaterThan(0);
      rfb.release();
      session.stream.destroy();

      // A new session's password replaces the last one: the old one no longer opens the console.
      const second = await driver.consoleEndpoint(vm.hcp_id, op());
      expect(second.password).not.toBe(session.rfb_password);
      const stale = await rawConnect(second.host, second.port);
      const refused = await connectRfbServer(stale, { password: session.rfb_password, timeoutMs: 10_000 }).catch(
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(RfbHandshakeError);
      expect((refused as RfbHandshakeError).reason).toBe('auth_failed');
      const fresh = await rawConnect(second.host, second.port);
      await expect(connectRfbServer(fresh, { password: second.password, timeoutMs: 10_000 })).resolves.toMatchObject({
        security: 'vnc',
      });
      fresh.destroy();
    });

    it('reboots gracefully: the guest powers itself down on the ACPI request and boots again', async () => {
      const rebooted = await driver.rebootVm(vm.hcp_id, false, op());
      expect(rebooted.power_state).toBe('running');
      await guestReady(vm.hcp_id, 2);
      const log = await serialLog(vm.hcp_id);
      expect(count(log, 'acpid: PWRF')).toBe(1);
      // Two boots, not three: the ACPI reboot was seen, so no reset followed it.
      expect(count(log, 'up since')).toBe(2);
    });

    it('stops gracefully: the guest shuts itself down (reason shutdown, not destroyed)', async () => {
      const stopped = await driver.stopVm(vm.hcp_id, false, op());
      expect(stopped.power_state).toBe('stopped');
      expect(await domainStateReason(`hcp-${vm.hcp_id}`)).toBe('shut off (shutdown)');
      expect(count(await serialLog(vm.hcp_id), 'acpid: PWRF')).toBe(2);
      await driver.deleteVm(vm.hcp_id, op());
    });
  });

  describe('a guest deaf to ACPI', () => {
    let vm: CreateVmSpec;
    let impatient: LibvirtDriver;

    beforeAll(async () => {
      impatient = new LibvirtDriver({
        uri: LIBVIRT_URI,
        pool: guest.pool,
        provider_id: 'provider-libvirt',
        cluster_id: 'cluster-libvirt',
        shutdown_timeout_ms: 3_000,
      });
      vm = spec({ image_ref: guest.deaf_image_ref });
      await impatient.createVm(vm, op());
      await guestReady(vm.hcp_id);
    });

    it('is reset when it does not act on a graceful reboot', async () => {
      expect((await impatient.rebootVm(vm.hcp_id, false, op())).power_state).toBe('running');
      await guestReady(vm.hcp_id, 2);
      expect(await serialLog(vm.hcp_id)).not.toContain('acpid');
    });

    it('is powered off after the shutdown timeout of a graceful stop', async () => {
      expect((await impatient.stopVm(vm.hcp_id, false, op())).power_state).toBe('stopped');
      expect(await domainStateReason(`hcp-${vm.hcp_id}`)).toBe('shut off (destroyed)');
      await impatient.deleteVm(vm.hcp_id, op());
    });
  });

  it('makes one domain and one disk from a create made twice, and delete removes both but not the base image', async () => {
    const vm = spec({ power_on: false });
    const first = await driver.createVm(vm, op());
    const second = await driver.createVm(vm, op());
    expect(second.provider_ref).toEqual(first.provider_ref);
    expect(first.provider_ref).toMatchObject({ domain: `hcp-${vm.hcp_id}`, uri: LIBVIRT_URI });
    expect(await domainExists(`hcp-${vm.hcp_id}`)).toBe(true);
    expect(await volumeExists(guest.pool, `hcp-${vm.hcp_id}.qcow2`)).toBe(true);
    expect((await driver.listVms(op())).filter((d) => d.hcp_id === vm.hcp_id)).toHaveLength(1);

    await driver.deleteVm(vm.hcp_id, op());
    expect(await domainExists(`hcp-${vm.hcp_id}`)).toBe(false);
    expect(await volumeExists(guest.pool, `hcp-${vm.hcp_id}.qcow2`)).toBe(false);
    expect(await volumeExists(guest.pool, guest.image_ref)).toBe(true);
  });

  it('completes a half-made VM (its disk made, its domain not) on a repeated create, reusing the disk', async () => {
    const vm = spec({ power_on: false, disk_gb: 1 });
    const volume = `hcp-${vm.hcp_id}.qcow2`;
    const capacity = async () =>
      /<capacity unit='bytes'>(\d+)</.exec(await virshOut(['vol-dumpxml', '--pool', guest.pool, volume]))?.[1];
    // What a create that crashed between its two steps leaves (2 GiB: a disk this create would not make).
    await virshOut([
      'vol-create-as',
      guest.pool,
      volume,
      '2G',
      '--format',
      'qcow2',
      '--backing-vol',
      guest.image_ref,
      '--backing-vol-format',
      'qcow2',
    ]);
    expect((await driver.createVm(vm, op())).power_state).toBe('stopped');
    expect(await domainExists(`hcp-${vm.hcp_id}`)).toBe(true);
    expect(await capacity()).toBe(String(2 * 1024 ** 3));
    await driver.deleteVm(vm.hcp_id, op());
    expect(await volumeExists(guest.pool, volume)).toBe(false);
  });

  it('refuses an image the host does not have with INVALID_REQUEST and leaves no disk behind', async () => {
    const vm = spec({ image_ref: 'no-such-image.qcow2' });
    const err = await caught(driver.createVm(vm, op()));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.retryable).toBe(false);
    expect(await volumeExists(guest.pool, `hcp-${vm.hcp_id}.qcow2`)).toBe(false);
    expect(await domainExists(`hcp-${vm.hcp_id}`)).toBe(false);
  });

  it('reports the host capacity and its pool, and a missing pool as unavailable', async () => {
    const capacity = await driver.hostCapacity(op());
    expect(capacity.vcpus).toBeGreaterThan(0);
    expect(capacity.ram_mb).toBeGreaterThan(0);
    expect(capacity.free_ram_mb).toBeGreaterThan(0);
    expect(capacity.disk_gb).toBeGreaterThan(0);
    await driver.checkConnectivity(op());
    const elsewhere = new LibvirtDriver({
      uri: LIBVIRT_URI,
      pool: 'hcp-no-such-pool',
      provider_id: 'p',
      cluster_id: 'c',
    });
    expect((await caught(elsewhere.checkConnectivity(op()))).code).toBe('PROVIDER_UNAVAILABLE');
  });
});
