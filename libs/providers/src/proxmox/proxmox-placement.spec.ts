import { DEFAULT_PROXMOX_SETTINGS, type ProxmoxSettings } from './proxmox-config';
import { isDeterministicRefusal } from './proxmox-errors';
import { buildDescription, DESCRIPTION_MAX_BYTES, hcpIdOfDescription, sourceStoragesOf } from './proxmox-format';
import { planClone } from './proxmox-placement';
import type { ClusterResource } from './proxmox-translate';

const GiB = 1024 ** 3;
const node = (name: string, usedGb: number): ClusterResource => ({
  id: `node/${name}`,
  type: 'node',
  node: name,
  status: 'online',
  maxmem: 64 * GiB,
  mem: usedGb * GiB,
});
const storage = (name: string, on: string, shared: boolean): ClusterResource => ({
  id: `storage/${on}/${name}`,
  type: 'storage',
  node: on,
  storage: name,
  shared: shared ? 1 : 0,
});
const template = (vmid: number, name: string, on: string): ClusterResource => ({
  id: `qemu/${vmid}`,
  type: 'qemu',
  vmid,
  node: on,
  name,
  template: 1,
});

// pve2 is the freer node; the template lives on pve1.
const RESOURCES: ClusterResource[] = [
  node('pve1', 40),
  node('pve2', 4),
  ...['pve1', 'pve2'].flatMap((n) => [storage('local-lvm', n, false), storage('ceph-vm', n, true)]),
  template(9000, 'debian-12', 'pve1'),
];
const settings = (over: Partial<ProxmoxSettings> = {}): ProxmoxSettings => ({
  ...DEFAULT_PROXMOX_SETTINGS,
  storage: 'ceph-vm',
  ...over,
});

describe('planClone', () => {
  it('keeps a template with any local volume on its own node, however free the others are', () => {
    const storages = new Map([[9000, ['ceph-vm', 'local-lvm']]]);
    expect(planClone(RESOURCES, 'debian-12', settings(), storages)).toEqual({
      templateNode: 'pve1',
      templateVmid: 9000,
      targetNode: 'pve1',
    });
  });

  it('keeps a template whose volumes it could not read on its own node', () => {
    expect(planClone(RESOURCES, 'debian-12', settings(), new Map()).targetNode).toBe('pve1');
  });

  it('moves a template whose every volume is shared to the freest node, for a full clone onto shared storage', () => {
    const storages = new Map([[9000, ['ceph-vm']]]);
    expect(planClone(RESOURCES, 'debian-12', settings(), storages).targetNode).toBe('pve2');
    // A full clone onto local storage cannot leave the template's node either.
    expect(planClone(RESOURCES, 'debian-12', settings({ storage: 'local-lvm' }), storages).targetNode).toBe('pve1');
    expect(planClone(RESOURCES, 'debian-12', settings({ nodes: ['pve1'] }), storages).targetNode).toBe('pve1');
  });

  it('picks among copies of a template the one on the freest node, and refuses when none may be used', () => {
    const two = [...RESOURCES, template(9001, 'debian-12', 'pve2')];
    const storages = new Map([
      [9000, ['local-lvm']],
      [9001, ['local-lvm']],
    ]);
    expect(planClone(two, 'debian-12', settings(), storages)).toMatchObject({ templateVmid: 9001, targetNode: 'pve2' });
    const pinned = () =>
      planClone(RESOURCES, 'debian-12', settings({ nodes: ['pve2'] }), new Map([[9000, ['local-lvm']]]));
    expect(pinned).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', retryable: false }));
  });
});

describe('sourceStoragesOf', () => {
  it('lists the storages of the disks and the cloud-init drive, not of an ISO', () => {
    expect(
      sourceStoragesOf({
        scsi0: 'ceph-vm:base-9000-disk-0,size=2G',
        ide2: 'local-lvm:vm-9000-cloudinit,media=cdrom',
        ide0: 'local:iso/debian.iso,media=cdrom',
        sata1: 'none,media=cdrom',
        net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
      }).sort(),
    ).toEqual(['ceph-vm', 'local-lvm']);
  });
});

describe('buildDescription', () => {
  it('stays within 8 KiB, leaving out the tags first and never the hcp-id line', () => {
    const tags = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'é'.repeat(200)]));
    const text = buildDescription({ hcp_id: 'vm-1', project_id: 'p', name: 'web', tags });
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(DESCRIPTION_MAX_BYTES);
    expect(hcpIdOfDescription(text)).toBe('vm-1');
    expect(text).toContain('hcp-name: web');
    expect(text).toContain('hcp-tags: (left out');
    const small = buildDescription({ hcp_id: 'vm-1', tags: { env: 'prod' } });
    expect(small).toContain('hcp-tags: {"env":"prod"}');
  });
});

describe('isDeterministicRefusal', () => {
  it('knows refusals a retry repeats, and never takes a lock or a timeout for one', () => {
    for (const text of [
      'SSH public key validation error',
      "can't clone VM to node 'pve2' (VM uses local storage)",
      "storage 'x' is not available on node 'pve2'",
      "can't remove VM - protection mode enabled",
    ]) {
      expect(isDeterministicRefusal(text)).toBe(true);
    }
    for (const text of [
      'VM is locked (clone)',
      "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout",
      'got no worker upid - start worker failed',
      'internal storage error on node pve1',
    ]) {
      expect(isDeterministicRefusal(text)).toBe(false);
    }
  });
});
