import { MeteringKind, MeteringRecord } from './metering-record';

/**
 * Usage for billing, computed from metering records (what `hcp.metering.v1` carries). Pure: records in,
 * usage out, whatever their order and however often each was delivered.
 *
 * When a VM costs, in the records' own terms (outcomes at the provider, never requests):
 * - It starts to cost at `vm.allocated`: the provider made it (VmProvisioned, or an adopted VM). A
 *   create that was requested but never provisioned costs nothing.
 * - It is running from `vm.powered_on` to the next `vm.powered_off` or `vm.deleted`, and powered off
 *   from `vm.allocated` (when it was not powered on at once) or `vm.powered_off` to the next
 *   `vm.powered_on` or `vm.deleted`. A VM the provider lost (`vm.powered_off` from VmVanished) counts as
 *   powered off until it is deleted: its allocation is HCP's until then.
 * - It stops costing at `vm.deleted`: the provider deleted it (a delete request alone changes nothing).
 *   Records after it are ignored.
 * - `vm.resized` (no driver offers resize today) changes the VM's flavor and resources from its time on;
 *   each stretch of time is counted under the flavor and zone the VM had then.
 * Every stretch is clipped to [from, until), so VMs created or deleted inside the period count only
 * their time inside it. Records of one VM at the same millisecond apply in the order allocated, resized,
 * powered_on, powered_off, deleted (then by event id), which makes the result independent of the order
 * records arrive in. Records are told apart by `event_id`: a record seen twice counts once.
 *
 * Figures: `running_seconds` and `powered_off_seconds` to the millisecond; `vm_hours` (running),
 * `vcpu_hours` (vCPUs × running hours), `gib_hours` (memory GiB × running hours) and
 * `powered_off_hours`, each rounded to 6 decimals from exact millisecond sums.
 */
export interface UsageFigures {
  running_seconds: number;
  powered_off_seconds: number;
  vm_hours: number;
  vcpu_hours: number;
  gib_hours: number;
  powered_off_hours: number;
}

/** Usage of one project's VMs of one flavor in one zone; `vms`: how many had any time in the period. */
export interface UsageGroup extends UsageFigures {
  project_id: string;
  zone: string;
  flavor_id: string;
  vms: number;
}

/** One VM's usage under one flavor and zone (a VM appears once unless it was resized). */
export interface VmUsage extends UsageFigures {
  vm_id: string;
  project_id: string;
  zone: string;
  flavor_id: string;
  vcpus: number;
  ram_mb: number;
}

export interface UsageTotals extends UsageFigures {
  vms: number;
}

export interface UsageReport {
  from: string;
  to: string;
  /** Where counting stopped: `to`, or the time of the computation when `to` is still ahead. */
  measured_until: string;
  groups: UsageGroup[];
  totals: UsageTotals;
  vms?: VmUsage[];
}

export interface UsagePeriod {
  from: Date;
  to: Date;
  /** Counting stops here when it is before `to` (now, for a period not over yet). Default: `to`. */
  until?: Date;
}

const KIND_ORDER: Readonly<Record<MeteringKind, number>> = {
  'vm.allocated': 0,
  'vm.resized': 1,
  'vm.powered_on': 2,
  'vm.powered_off': 3,
  'vm.deleted': 4,
};

const MS_PER_HOUR = 3_600_000;
const MIB_PER_GIB = 1024;

/** Exact sums in milliseconds (BigInt: a year of a large fleet's MiB·ms exceeds 2^53). */
interface Sums {
  running_ms: bigint;
  off_ms: bigint;
  vcpu_ms: bigint;
  mib_ms: bigint;
}

type PowerState = 'none' | 'on' | 'off' | 'gone';

interface Placement {
  project_id: string;
  zone: string;
  flavor_id: string;
  vcpus: number;
  ram_mb: number;
}

/** The usage of the VMs the records describe, for the period. */
export function computeUsage(
  records: Iterable<MeteringRecord>,
  period: UsagePeriod,
  options: { detail?: boolean } = {},
): UsageReport {
  const from = period.from.getTime();
  const to = period.to.getTime();
  const until = Math.max(from, Math.min(to, (period.until ?? period.to).getTime()));

  const byVm = new Map<string, Map<string, MeteringRecord>>();
  for (const r of records) {
    if (!Object.hasOwn(KIND_ORDER, r.kind) || Number.isNaN(Date.parse(r.effective_at))) continue;
    const own = byVm.get(r.vm_id) ?? new Map<string, MeteringRecord>();
    if (!own.has(r.event_id)) own.set(r.event_id, r);
    byVm.set(r.vm_id, own);
  }

  const lines = new Map<string, { placement: Placement; vm_id: string; sums: Sums }>();
  for (const [vmId, own] of byVm) {
    for (const stretch of stretchesOf([...own.values()])) {
      const start = Math.max(stretch.start, from);
      const end = Math.min(stretch.end, until);
      if (end <= start) continue;
      const key = JSON.stringify([vmId, stretch.placement.zone, stretch.placement.flavor_id]);
      const line = lines.get(key) ?? { placement: stretch.placement, vm_id: vmId, sums: zero() };
      // The latest placement under this key describes the line (resources differ only after a resize).
      line.placement = stretch.placement;
      add(line.sums, stretch.state, stretch.placement, BigInt(end - start));
      lines.set(key, line);
    }
  }

  const groups = new Map<string, { group: Omit<UsageGroup, keyof UsageFigures | 'vms'>; sums: Sums; vms: number }>();
  const totals = zero();
  const vms = new Set<string>();
  for (const line of lines.values()) {
    const { project_id, zone, flavor_id } = line.placement;
    const key = JSON.stringify([project_id, zone, flavor_id]);
    const group = groups.get(key) ?? { group: { project_id, zone, flavor_id }, sums: zero(), vms: 0 };
    merge(group.sums, line.sums);
    group.vms += 1;
    groups.set(key, group);
    merge(totals, line.sums);
    vms.add(line.vm_id);
  }

  const report: UsageReport = {
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    measured_until: new Date(until).toISOString(),
    groups: [...groups.values()]
      .map((g) => ({ ...g.group, vms: g.vms, ...figures(g.sums) }))
      .sort((a, b) => compare([a.project_id, a.zone, a.flavor_id], [b.project_id, b.zone, b.flavor_id])),
    totals: { vms: vms.size, ...figures(totals) },
  };
  if (options.detail)
    report.vms = [...lines.values()]
      .map((l) => ({
        vm_id: l.vm_id,
        project_id: l.placement.project_id,
        zone: l.placement.zone,
        flavor_id: l.placement.flavor_id,
        vcpus: l.placement.vcpus,
        ram_mb: l.placement.ram_mb,
        ...figures(l.sums),
      }))
      .sort((a, b) =>
        compare([a.project_id, a.vm_id, a.zone, a.flavor_id], [b.project_id, b.vm_id, b.zone, b.flavor_id]),
      );
  return report;
}

interface Stretch {
  state: 'on' | 'off';
  placement: Placement;
  start: number;
  end: number;
}

/** One VM's life as stretches of running or powered-off time (the last one open: ends at +∞). */
function stretchesOf(records: MeteringRecord[]): Stretch[] {
  const timed = records
    .map((r) => ({ r, at: Date.parse(r.effective_at) }))
    .sort(
      (a, b) =>
        a.at - b.at ||
        KIND_ORDER[a.r.kind] - KIND_ORDER[b.r.kind] ||
        (a.r.event_id < b.r.event_id ? -1 : a.r.event_id > b.r.event_id ? 1 : 0),
    );
  const stretches: Stretch[] = [];
  let state: PowerState = 'none';
  let placement: Placement | null = null;
  let since = 0;
  for (const { r, at } of timed) {
    if (state === 'gone') break;
    if (placement && (state === 'on' || state === 'off') && at > since)
      stretches.push({ state, placement, start: since, end: at });
    // A VM's zone, flavor and resources are set when it is allocated and change only by a resize; a
    // power record seen first (its allocation lost to retention) describes the VM too.
    if (r.kind === 'vm.allocated' || r.kind === 'vm.resized' || placement === null) placement = placementOf(r);
    switch (r.kind) {
      case 'vm.allocated':
        if (state === 'none') state = 'off';
        break;
      case 'vm.powered_on':
        state = 'on';
        break;
      case 'vm.powered_off':
        state = 'off';
        break;
      case 'vm.deleted':
        state = 'gone';
        break;
      case 'vm.resized':
        break;
    }
    since = at;
  }
  if (placement && (state === 'on' || state === 'off'))
    stretches.push({ state, placement, start: since, end: Number.POSITIVE_INFINITY });
  return stretches;
}

function placementOf(r: MeteringRecord): Placement {
  return {
    project_id: r.project_id,
    zone: r.zone,
    flavor_id: r.flavor_id,
    vcpus: r.resources.vcpus,
    ram_mb: r.resources.ram_mb,
  };
}

const zero = (): Sums => ({ running_ms: 0n, off_ms: 0n, vcpu_ms: 0n, mib_ms: 0n });

function add(sums: Sums, state: 'on' | 'off', placement: Placement, ms: bigint): void {
  if (state === 'off') {
    sums.off_ms += ms;
    return;
  }
  sums.running_ms += ms;
  sums.vcpu_ms += BigInt(placement.vcpus) * ms;
  sums.mib_ms += BigInt(placement.ram_mb) * ms;
}

function merge(into: Sums, more: Sums): void {
  into.running_ms += more.running_ms;
  into.off_ms += more.off_ms;
  into.vcpu_ms += more.vcpu_ms;
  into.mib_ms += more.mib_ms;
}

function figures(s: Sums): UsageFigures {
  return {
    running_seconds: Number(s.running_ms) / 1000,
    powered_off_seconds: Number(s.off_ms) / 1000,
    vm_hours: round6(Number(s.running_ms) / MS_PER_HOUR),
    vcpu_hours: round6(Number(s.vcpu_ms) / MS_PER_HOUR),
    gib_hours: round6(Number(s.mib_ms) / MIB_PER_GIB / MS_PER_HOUR),
    powered_off_hours: round6(Number(s.off_ms) / MS_PER_HOUR),
  };
}

const round6 = (n: number): number => Math.round(n * 1e6) / 1e6;

function compare(a: string[], b: string[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] ?? '') < (b[i] ?? '') ? -1 : 1;
  return 0;
}
