'use strict';

/**
 * Usage of a period from metering records, as this billing system understands them (the same rules as
 * HCP's GET /v1/ops/usage, so both can be compared to the millisecond):
 *
 * - a VM costs from `vm.allocated` until `vm.deleted`; records after the deletion are ignored;
 * - it is running after `vm.powered_on`, powered off after `vm.allocated` or `vm.powered_off`;
 * - `vm.resized` moves it to another flavor (and resources) from then on;
 * - records of one VM at the same millisecond apply as allocated, resized, powered_on, powered_off,
 *   deleted (then by event id), so the order they arrived in does not matter;
 * - time is clipped to [from, until), until = min(to, now).
 *
 * Sums are whole milliseconds in plain numbers (exact below 2^53 ms·MiB, years of a few hundred VMs);
 * hours are rounded to 6 decimals.
 */

const RANK = { 'vm.allocated': 0, 'vm.resized': 1, 'vm.powered_on': 2, 'vm.powered_off': 3, 'vm.deleted': 4 };

function emptySums() {
  return { runMs: 0, offMs: 0, vcpuMs: 0, mibMs: 0 };
}

function addSums(into, more) {
  into.runMs += more.runMs;
  into.offMs += more.offMs;
  into.vcpuMs += more.vcpuMs;
  into.mibMs += more.mibMs;
}

const round6 = (n) => Math.round(n * 1e6) / 1e6;

function figures(s) {
  return {
    running_seconds: s.runMs / 1000,
    powered_off_seconds: s.offMs / 1000,
    vm_hours: round6(s.runMs / 3_600_000),
    vcpu_hours: round6(s.vcpuMs / 3_600_000),
    gib_hours: round6(s.mibMs / 1024 / 3_600_000),
    powered_off_hours: round6(s.offMs / 3_600_000),
  };
}

/** Stretches [start, end) of one VM's records: { on, vm: {project_id, zone, flavor_id, vcpus, ram_mb}, start, end }. */
function stretches(records) {
  const sorted = records
    .map((r) => ({ r, t: Date.parse(r.effective_at) }))
    .sort((a, b) => a.t - b.t || RANK[a.r.kind] - RANK[b.r.kind] || (a.r.event_id < b.r.event_id ? -1 : 1));
  const out = [];
  let power = null; // null: not allocated yet; 'on' | 'off'
  let vm = null;
  let since = 0;
  for (const { r, t } of sorted) {
    if (power && vm && t > since) out.push({ on: power === 'on', vm, start: since, end: t });
    if (r.kind === 'vm.deleted') return out;
    if (r.kind === 'vm.allocated' || r.kind === 'vm.resized' || vm === null)
      vm = {
        project_id: r.project_id,
        zone: r.zone,
        flavor_id: r.flavor_id,
        vcpus: r.resources.vcpus,
        ram_mb: r.resources.ram_mb,
      };
    if (r.kind === 'vm.allocated' && power === null) power = 'off';
    if (r.kind === 'vm.powered_on') power = 'on';
    if (r.kind === 'vm.powered_off') power = 'off';
    since = t;
  }
  if (power && vm) out.push({ on: power === 'on', vm, start: since, end: Number.POSITIVE_INFINITY });
  return out;
}

/**
 * The report: { project, from, to, measured_until, groups[], totals, vms[]? } with groups per project,
 * zone and flavor. `records` must already be unique by event id (the store keeps them so).
 */
function usageReport(records, { from, to, now = new Date(), project = null, detail = false }) {
  const fromMs = from.getTime();
  const untilMs = Math.max(fromMs, Math.min(to.getTime(), now.getTime()));
  const perVm = new Map();
  for (const r of records) {
    if (!Object.hasOwn(RANK, r.kind)) continue;
    if (project !== null && r.project_id !== project) continue;
    if (!perVm.has(r.vm_id)) perVm.set(r.vm_id, []);
    perVm.get(r.vm_id).push(r);
  }
  const lines = new Map();
  for (const [vmId, own] of perVm) {
    for (const s of stretches(own)) {
      const ms = Math.min(s.end, untilMs) - Math.max(s.start, fromMs);
      if (ms <= 0) continue;
      const key = `${vmId}\u0000${s.vm.zone}\u0000${s.vm.flavor_id}`;
      const line = lines.get(key) ?? { vmId, vm: s.vm, sums: emptySums() };
      line.vm = s.vm;
      if (s.on) {
        line.sums.runMs += ms;
        line.sums.vcpuMs += s.vm.vcpus * ms;
        line.sums.mibMs += s.vm.ram_mb * ms;
      } else line.sums.offMs += ms;
      lines.set(key, line);
    }
  }
  const groups = new Map();
  const totals = emptySums();
  const vmIds = new Set();
  for (const line of lines.values()) {
    const key = `${line.vm.project_id}\u0000${line.vm.zone}\u0000${line.vm.flavor_id}`;
    const group = groups.get(key) ?? { vm: line.vm, sums: emptySums(), vms: 0 };
    addSums(group.sums, line.sums);
    group.vms += 1;
    groups.set(key, group);
    addSums(totals, line.sums);
    vmIds.add(line.vmId);
  }
  const byText =
    (...keys) =>
    (a, b) => {
      for (const k of keys) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
      return 0;
    };
  const report = {
    project,
    from: from.toISOString(),
    to: to.toISOString(),
    measured_until: new Date(untilMs).toISOString(),
    groups: [...groups.values()]
      .map((g) => ({
        project_id: g.vm.project_id,
        zone: g.vm.zone,
        flavor_id: g.vm.flavor_id,
        vms: g.vms,
        ...figures(g.sums),
      }))
      .sort(byText('project_id', 'zone', 'flavor_id')),
    totals: { vms: vmIds.size, ...figures(totals) },
  };
  if (detail)
    report.vms = [...lines.values()]
      .map((l) => ({
        vm_id: l.vmId,
        project_id: l.vm.project_id,
        zone: l.vm.zone,
        flavor_id: l.vm.flavor_id,
        vcpus: l.vm.vcpus,
        ram_mb: l.vm.ram_mb,
        ...figures(l.sums),
      }))
      .sort(byText('project_id', 'vm_id', 'zone', 'flavor_id'));
  return report;
}

module.exports = { usageReport };
