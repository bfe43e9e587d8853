import {
  agentEnabled,
  bootDiskOf,
  buildDescription,
  cloneMarkerName,
  decodeSshKeys,
  descriptionWithTags,
  diskSizeOf,
  dnsName,
  encodeSshKeys,
  hcpIdOfDescription,
  hcpIdTag,
  macOf,
  providerTagsOf,
  proxmoxTagList,
  tagsOfDescription,
  memoryMiB,
  netOnBridge,
  parseTags,
  parseUpid,
} from './proxmox-format';

describe('parseUpid', () => {
  it('reads node, hex numbers, type, id and a token user', () => {
    expect(parseUpid('UPID:pve2:0001C3A5:0A1B2C3D:65A1B2C3:qmclone:9000:hcp@pve!hcp:')).toEqual({
      node: 'pve2',
      pid: 0x1c3a5,
      pstart: 0x0a1b2c3d,
      starttime: 0x65a1b2c3,
      type: 'qmclone',
      id: '9000',
      user: 'hcp@pve!hcp',
    });
  });

  it('rejects what is not a UPID (missing trailing colon, bad node)', () => {
    expect(parseUpid('UPID:pve2:0001C3A5:0A1B2C3D:65A1B2C3:qmstart:100:root@pam')).toBeNull();
    expect(parseUpid('UPID:pve_2:0001C3A5:0A1B2C3D:65A1B2C3:qmstart:100:root@pam:')).toBeNull();
    expect(parseUpid('not a upid')).toBeNull();
  });
});

describe('net0 and disks', () => {
  it('moves net0 to the bridge and keeps model and MAC', () => {
    expect(netOnBridge('virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1', 'vmbr5')).toBe(
      'virtio=BC:24:11:AA:BB:CC,bridge=vmbr5,firewall=1',
    );
    expect(netOnBridge('e1000=BC:24:11:AA:BB:CC', 'vmbr1')).toBe('e1000=BC:24:11:AA:BB:CC,bridge=vmbr1');
    expect(netOnBridge(undefined, 'vmbr0')).toBe('virtio,bridge=vmbr0');
    expect(macOf('virtio=bc:24:11:aa:bb:cc,bridge=vmbr0')).toBe('BC:24:11:AA:BB:CC');
  });

  it('reads disk sizes and finds the boot disk, skipping cloud-init and CD drives', () => {
    expect(diskSizeOf('local-lvm:vm-101-disk-0,iothread=1,size=32G')).toBe(32 * 1024 ** 3);
    expect(diskSizeOf('local-lvm:vm-101-disk-0,size=2252M')).toBe(2252 * 1024 ** 2);
    expect(diskSizeOf('local-lvm:vm-101-disk-0')).toBeUndefined();
    expect(
      bootDiskOf({ boot: 'order=ide2;virtio1;net0', ide2: 'local:vm-1-cloudinit,media=cdrom', virtio1: 'l:d,size=1G' }),
    ).toBe('virtio1');
    expect(bootDiskOf({ bootdisk: 'sata0', sata0: 'l:d,size=1G', scsi0: 'l:e,size=1G' })).toBe('sata0');
    expect(bootDiskOf({ ide0: 'l:d,size=1G', scsi3: 'l:e,size=1G', ide2: 'none,media=cdrom' })).toBe('scsi3');
    expect(bootDiskOf({ ide2: 'local-lvm:vm-1-cloudinit,media=cdrom' })).toBeUndefined();
  });
});

describe('HCP marks', () => {
  it('writes and reads the HCP id in the description, one line per value', () => {
    const text = buildDescription({ hcp_id: 'vm-1', project_id: 'p\nx', name: 'web', tags: { a: 'b' } });
    expect(hcpIdOfDescription(text)).toBe('vm-1');
    expect(text).toContain('hcp-project: p x');
    expect(text).toContain('hcp-tags: {"a":"b"}');
    expect(hcpIdOfDescription('someone else')).toBeUndefined();
    expect(hcpIdOfDescription(undefined)).toBeUndefined();
  });

  it('makes valid Proxmox tags and names from any id', () => {
    expect(hcpIdTag('3F2504E0-4F89-11D3-9A0C-0305E82C3301')).toBe('hcp-id-3f2504e0-4f89-11d3-9a0c-0305e82c3301');
    expect(hcpIdTag('a b/c')).toBe('hcp-id-a_b_c');
    expect(cloneMarkerName('VM_42 x')).toBe('hcp-vm-42-x');
    expect(parseTags('hcp;hcp-id-x, other')).toEqual(['hcp', 'hcp-id-x', 'other']);
    expect(dnsName('Web Server #1')).toBe('web-server-1');
    expect(dnsName('db.internal')).toBe('db.internal');
    expect(dnsName('___')).toBeUndefined();
  });

  it('URL-encodes ssh keys with %20 and decodes them back', () => {
    const keys = ['ssh-ed25519 AAAA+/= me@host', 'ssh-rsa BBBB you@host'];
    const encoded = encodeSshKeys(keys);
    expect(encoded).toMatch(/^[-%a-zA-Z0-9_.!~*'()]*$/);
    expect(encoded).toContain('ssh-ed25519%20AAAA%2B%2F%3D%20me%40host%0Assh-rsa');
    expect(decodeSshKeys(encoded)).toEqual(keys);
  });

  it('reads memory and agent property strings', () => {
    expect(memoryMiB('2048')).toBe(2048);
    expect(memoryMiB('current=4096')).toBe(4096);
    expect(memoryMiB(1024)).toBe(1024);
    expect(agentEnabled('1')).toBe(true);
    expect(agentEnabled('enabled=1,fstrim_cloned_disks=1')).toBe(true);
    expect(agentEnabled('0')).toBe(false);
    expect(agentEnabled(undefined)).toBe(false);
  });
});

describe('tenant tags on a Proxmox VM', () => {
  const ID = '0b6f3c1e-2a4d-4e8f-9a1b-2c3d4e5f6a7b';
  const description = buildDescription({ hcp_id: ID, project_id: 'p1', name: 'web', tags: { env: 'dev' } });

  it('writes HCP marks first, one valid token per tag, keeps tags others set and drops the replaced ones', () => {
    const list = proxmoxTagList(ID, { env: 'prod', 'Team Name': 'Blue Ops' }, `hcp;hcp-id-${ID};env.dev;backup`, {
      env: 'dev',
    });
    expect(list.split(';')).toEqual(['hcp', `hcp-id-${ID}`, 'env.prod', 'team_name.blue_ops', 'backup']);
    for (const tag of list.split(';')) expect(tag).toMatch(/^[a-z0-9_][a-z0-9_+.-]*$/);
  });

  it('reads the exact tags back from the description, and only those whose token the VM carries', () => {
    expect(tagsOfDescription(description)).toEqual({ env: 'dev' });
    expect(providerTagsOf({ description, tags: `hcp;hcp-id-${ID};env.dev` })).toEqual({ env: 'dev' });
    expect(providerTagsOf({ description, tags: `hcp;hcp-id-${ID}` })).toEqual({});
  });

  it('rewrites the tags of a description and keeps its identifying lines', () => {
    const rewritten = descriptionWithTags(description, { env: 'prod' })!;
    expect(hcpIdOfDescription(rewritten)).toBe(ID);
    expect(rewritten).toContain('hcp-project: p1');
    expect(rewritten).toContain('hcp-name: web');
    expect(tagsOfDescription(rewritten)).toEqual({ env: 'prod' });
    expect(descriptionWithTags('a VM someone made by hand', { env: 'prod' })).toBeUndefined();
  });

  it('reports tags left out of an oversized description as unknown', () => {
    const big = buildDescription({ hcp_id: ID, tags: { blob: 'x'.repeat(9000) } });
    expect(tagsOfDescription(big)).toBeUndefined();
    expect(tagsOfDescription(`hcp-id: ${ID}`)).toEqual({});
  });
});
