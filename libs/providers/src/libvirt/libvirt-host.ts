/** The host's size as virsh reports it (`nodeinfo`, `nodememstats`, `pool-info --bytes`). */
import type { HostCapacity } from '@hcp/host-protocol';

/** `Key: value` lines (nodeinfo, pool-info) or `key : value` lines (nodememstats) as a map. */
export function keyValues(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return out;
}

const leadingNumber = (v: string | undefined) => Number.parseFloat(v ?? '') || 0;
const GIB = 1024 ** 3;

export function hostCapacityOf(nodeinfo: string, memstats: string, poolInfo: string | null): HostCapacity {
  const node = keyValues(nodeinfo);
  const mem = keyValues(memstats);
  // Page cache and buffers are memory the host gives back to a guest that asks; what is left is the
  // host's own and its running guests'.
  const freeKib = ['free', 'buffers', 'cached'].reduce((sum, k) => sum + leadingNumber(mem.get(k)), 0);
  const ramMb = Math.trunc(leadingNumber(node.get('memory size')) / 1024);
  const capacity: HostCapacity = {
    vcpus: Math.trunc(leadingNumber(node.get('cpu(s)'))),
    ram_mb: ramMb,
    // nodememstats reads the kernel's counters while nodeinfo may report less (a container's or a
    // NUMA-limited view): what is free is never more than what there is.
    free_ram_mb: Math.min(ramMb, Math.trunc(freeKib / 1024)),
  };
  if (poolInfo) {
    const pool = keyValues(poolInfo);
    capacity.disk_gb = Math.trunc(leadingNumber(pool.get('capacity')) / GIB);
    capacity.free_disk_gb = Math.trunc(leadingNumber(pool.get('available')) / GIB);
  }
  return capacity;
}
