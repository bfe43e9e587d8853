import * as fc from 'fast-check';
import { MeteringKind, MeteringRecord } from './metering-record';
import { computeUsage, UsageReport } from './usage';

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const H = 3_600_000;
const at = (hours: number) => new Date(T0 + hours * H);

const SMALL = { flavor_id: 'small', resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 } };
const MEDIUM = { flavor_id: 'medium', resources: { vcpus: 2, ram_mb: 4096, disk_gb: 40 } };

let seq = 0;
function rec(
  vm: string,
  kind: MeteringKind,
  hours: number,
  more: Partial<MeteringRecord> & { flavor_id?: string } = {},
): MeteringRecord {
  seq += 1;
  return {
    event_id: `e-${String(seq).padStart(6, '0')}`,
    kind,
    project_id: 'p1',
    vm_id: vm,
    zone: 'local',
    ...SMALL,
    effective_at: at(hours).toISOString(),
    ...more,
  };
}

const usage = (records: MeteringRecord[], fromH: number, toH: number, untilH?: number) =>
  computeUsage(
    records,
    { from: at(fromH), to: at(toH), until: untilH === undefined ? undefined : at(untilH) },
    {
      detail: true,
    },
  );

describe('computeUsage', () => {
  it('counts running and powered-off time apart, clipped to the period', () => {
    const records = [
      rec('a', 'vm.allocated', 10),
      rec('a', 'vm.powered_on', 10),
      rec('a', 'vm.powered_off', 12),
      rec('a', 'vm.powered_on', 13),
      rec('a', 'vm.deleted', 15),
    ];
    const report = usage(records, 11, 14);
    expect(report.totals).toEqual({
      vms: 1,
      running_seconds: 2 * 3600,
      powered_off_seconds: 3600,
      vm_hours: 2,
      vcpu_hours: 2,
      gib_hours: 2,
      powered_off_hours: 1,
    });
    expect(report.groups).toEqual([
      { project_id: 'p1', zone: 'local', flavor_id: 'small', vms: 1, ...figures(report) },
    ]);
  });

  it('prorates VMs created and deleted inside the period', () => {
    const records = [rec('a', 'vm.allocated', 2), rec('a', 'vm.powered_on', 2.5), rec('a', 'vm.deleted', 3.25)];
    const { totals } = usage(records, 0, 24);
    expect([totals.running_seconds, totals.powered_off_seconds]).toEqual([0.75 * 3600, 0.5 * 3600]);
  });

  it('bills nothing before allocation, after deletion, or for a VM deleted before the period', () => {
    const records = [
      rec('early', 'vm.allocated', 0, { ...MEDIUM }),
      rec('early', 'vm.powered_on', 0, { ...MEDIUM }),
      rec('early', 'vm.deleted', 1, { ...MEDIUM }),
      // Records after the deletion (a late drift report) change nothing.
      rec('early', 'vm.powered_on', 2, { ...MEDIUM }),
      rec('late', 'vm.allocated', 30),
    ];
    const report = usage(records, 5, 24);
    expect(report.groups).toEqual([]);
    expect(report.totals.vms).toBe(0);
  });

  it('groups by project, zone and flavor, with vCPU- and GiB-hours of running time', () => {
    const records = [
      rec('a', 'vm.allocated', 0),
      rec('a', 'vm.powered_on', 0),
      rec('b', 'vm.allocated', 0, { ...MEDIUM }),
      rec('b', 'vm.powered_on', 0, { ...MEDIUM }),
      rec('c', 'vm.allocated', 0, { ...MEDIUM, zone: 'lab' }),
      rec('d', 'vm.allocated', 0, { ...MEDIUM, zone: 'lab', project_id: 'p2' }),
      rec('d', 'vm.powered_on', 1, { ...MEDIUM, zone: 'lab', project_id: 'p2' }),
    ];
    const report = usage(records, 0, 4);
    expect(
      report.groups.map((g) => [
        g.project_id,
        g.zone,
        g.flavor_id,
        g.vms,
        g.vm_hours,
        g.vcpu_hours,
        g.gib_hours,
        g.powered_off_hours,
      ]),
    ).toEqual([
      ['p1', 'lab', 'medium', 1, 0, 0, 0, 4],
      ['p1', 'local', 'medium', 1, 4, 8, 16, 0],
      ['p1', 'local', 'small', 1, 4, 4, 4, 0],
      ['p2', 'lab', 'medium', 1, 3, 6, 12, 1],
    ]);
    expect(report.totals).toMatchObject({ vms: 4, vm_hours: 11, vcpu_hours: 18, gib_hours: 32, powered_off_hours: 5 });
    expect(report.vms?.map((v) => v.vm_id)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('stops counting at until when the period is not over yet', () => {
    const records = [rec('a', 'vm.allocated', 0), rec('a', 'vm.powered_on', 0)];
    const report = usage(records, 0, 24, 6);
    expect(report.measured_until).toBe(at(6).toISOString());
    expect(report.totals.vm_hours).toBe(6);
  });

  it('counts a VM the provider lost as powered off until it is deleted', () => {
    const records = [
      rec('a', 'vm.allocated', 0),
      rec('a', 'vm.powered_on', 0),
      rec('a', 'vm.powered_off', 1), // VmVanished
      rec('a', 'vm.deleted', 3),
    ];
    expect(usage(records, 0, 10).totals).toMatchObject({ vm_hours: 1, powered_off_hours: 2 });
  });

  it('applies records of the same millisecond in a fixed order, whatever order they come in', () => {
    const on = rec('a', 'vm.powered_on', 0);
    const allocated = rec('a', 'vm.allocated', 0);
    expect(usage([on, allocated], 0, 1).totals.vm_hours).toBe(1);
    expect(usage([allocated, on], 0, 1).totals.vm_hours).toBe(1);
  });

  it('counts a resized VM under each flavor for its own stretch', () => {
    const records = [
      rec('a', 'vm.allocated', 0),
      rec('a', 'vm.powered_on', 0),
      rec('a', 'vm.resized', 2, { ...MEDIUM }),
      rec('a', 'vm.powered_on', 3),
    ];
    const report = usage(records, 0, 4);
    expect(report.groups.map((g) => [g.flavor_id, g.vm_hours, g.vcpu_hours])).toEqual([
      ['medium', 2, 4],
      ['small', 2, 2],
    ]);
    expect(report.totals.vms).toBe(1);
  });

  it('ignores a record kind it does not know', () => {
    const records = [rec('a', 'vm.allocated', 0), rec('a', 'vm.hibernated' as MeteringKind, 1)];
    expect(usage(records, 0, 2).totals.powered_off_hours).toBe(2);
  });
});

// ------------------------------------------------------------------------------------------------------
// Properties

/** A VM's records: allocated, power changes at increasing times, maybe deleted. */
const vmLife = (vm: string) =>
  fc
    .record({
      flavor: fc.constantFrom(SMALL, MEDIUM),
      zone: fc.constantFrom('local', 'lab'),
      project: fc.constantFrom('p1', 'p2'),
      start: fc.integer({ min: 0, max: 48 * H }),
      onAtOnce: fc.boolean(),
      gaps: fc.array(fc.integer({ min: 0, max: 6 * H }), { maxLength: 6 }),
      deleted: fc.option(fc.integer({ min: 0, max: 24 * H })),
    })
    .map(({ flavor, zone, project, start, onAtOnce, gaps, deleted }) => {
      const base = { vm_id: vm, zone, project_id: project, ...flavor };
      const out: MeteringRecord[] = [];
      const push = (kind: MeteringKind, t: number, suffix = '') =>
        out.push({
          ...base,
          kind,
          event_id: `${vm}-${out.length}${suffix}`,
          effective_at: new Date(T0 + t).toISOString(),
        });
      push('vm.allocated', start);
      let on = onAtOnce;
      if (on) push('vm.powered_on', start, ':on');
      let t = start;
      for (const gap of gaps) {
        t += gap;
        on = !on;
        push(on ? 'vm.powered_on' : 'vm.powered_off', t);
      }
      if (deleted !== null) push('vm.deleted', t + deleted);
      return out;
    });

const fleet = fc
  .array(fc.constantFrom('v1', 'v2', 'v3', 'v4', 'v5'), { minLength: 1, maxLength: 5 })
  .chain((ids) => fc.tuple(...[...new Set(ids)].map(vmLife)))
  .map((lives) => lives.flat());

const period = fc
  .tuple(fc.integer({ min: 0, max: 96 * H }), fc.integer({ min: 1, max: 96 * H }))
  .map(([from, length]) => ({ from: new Date(T0 + from), to: new Date(T0 + from + length) }));

/** Exact millisecond figures of each group and the totals (hours are rounded, so sums may differ in the 6th decimal). */
function exact(report: UsageReport): Record<string, [number, number]> {
  const ms = (s: number) => Math.round(s * 1000);
  const out: Record<string, [number, number]> = {
    totals: [ms(report.totals.running_seconds), ms(report.totals.powered_off_seconds)],
  };
  for (const g of report.groups)
    out[`${g.project_id}/${g.zone}/${g.flavor_id}`] = [ms(g.running_seconds), ms(g.powered_off_seconds)];
  return out;
}

function figures(report: UsageReport) {
  const { vms: _vms, ...rest } = report.totals;
  return rest;
}

describe('computeUsage properties', () => {
  it('splitting a period in two gives the same sums', () => {
    fc.assert(
      fc.property(fleet, period, fc.double({ min: 0, max: 1, noNaN: true }), (records, p, cut) => {
        const middle = new Date(p.from.getTime() + Math.floor((p.to.getTime() - p.from.getTime()) * cut));
        const whole = exact(computeUsage(records, p));
        const first = exact(computeUsage(records, { from: p.from, to: middle }));
        const second = exact(computeUsage(records, { from: middle, to: p.to }));
        const summed: Record<string, [number, number]> = {};
        for (const part of [first, second])
          for (const [key, [run, off]] of Object.entries(part)) {
            const [r, o] = summed[key] ?? [0, 0];
            summed[key] = [r + run, o + off];
          }
        if (!('totals' in summed)) summed.totals = [0, 0];
        expect(summed).toEqual(whole);
      }),
      { numRuns: 300 },
    );
  });

  it('the order of records does not matter', () => {
    fc.assert(
      fc.property(
        fleet.chain((records) =>
          fc.tuple(fc.constant(records), fc.shuffledSubarray(records, { minLength: records.length })),
        ),
        period,
        ([records, shuffled], p) => {
          expect(computeUsage(shuffled, p, { detail: true })).toEqual(computeUsage(records, p, { detail: true }));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a record delivered more than once counts once', () => {
    fc.assert(
      fc.property(
        fleet.chain((records) => fc.tuple(fc.constant(records), fc.subarray(records))),
        period,
        ([records, again], p) => {
          const copies = again.map((r) => ({ ...r, resources: { ...r.resources } }));
          expect(computeUsage([...copies, ...records, ...copies], p, { detail: true })).toEqual(
            computeUsage(records, p, { detail: true }),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never counts more time than the period holds, per VM', () => {
    fc.assert(
      fc.property(fleet, period, (records, p) => {
        // In whole milliseconds, the figures' precision: two seconds figures added as floats can land a
        // rounding step above the period's length (323976.055 vs 323976.05500000005).
        const lengthMs = p.to.getTime() - p.from.getTime();
        const ms = (seconds: number) => Math.round(seconds * 1000);
        for (const vm of computeUsage(records, p, { detail: true }).vms ?? [])
          expect(ms(vm.running_seconds) + ms(vm.powered_off_seconds)).toBeLessThanOrEqual(lengthMs);
      }),
      { numRuns: 200 },
    );
  });
});
