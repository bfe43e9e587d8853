import { hostCapacityOf } from './libvirt-host';

const NODEINFO = `CPU model:           x86_64
CPU(s):              2
CPU frequency:       1996 MHz
Memory size:         9135944 KiB
`;
const MEMSTATS = `total  :             24683664 KiB
free   :             21227256 KiB
buffers:                45740 KiB
cached :               960980 KiB
`;
const POOL = `Name:           hcp
State:          running
Capacity:       270549172224 bytes
Allocation:     17577820160 bytes
Available:      252971352064 bytes
`;

describe('hostCapacityOf', () => {
  it('reads vcpus, memory and the pool from virsh nodeinfo, nodememstats and pool-info --bytes', () => {
    expect(hostCapacityOf(NODEINFO, MEMSTATS.replace('21227256', '1048576'), POOL)).toEqual({
      vcpus: 2,
      ram_mb: 8921,
      free_ram_mb: Math.trunc((1048576 + 45740 + 960980) / 1024),
      disk_gb: 251,
      free_disk_gb: 235,
    });
  });

  it('never reports more free memory than the host has, and no disk without a pool', () => {
    const capacity = hostCapacityOf(NODEINFO, MEMSTATS, null);
    expect(capacity.free_ram_mb).toBe(capacity.ram_mb);
    expect(capacity.disk_gb).toBeUndefined();
  });
});
