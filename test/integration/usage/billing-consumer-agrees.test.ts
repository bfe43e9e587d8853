import * as fc from 'fast-check';
import { computeUsage, MeteringKind, MeteringRecord, UsageReport } from '@hcp/domain';

// The example billing consumer is a customer's program in plain JavaScript, with its own calculator.
const { usageReport } = require('../../../examples/billing-consumer/src/usage') as {
  usageReport: (
    records: MeteringRecord[],
    options: { from: Date; to: Date; now?: Date; project?: string | null; detail?: boolean },
  ) => UsageReport & { project: string | null };
};

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const H = 3_600_000;
const FLAVORS = [
  { flavor_id: 'small', resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 } },
  { flavor_id: 'medium', resources: { vcpus: 2, ram_mb: 4096, disk_gb: 40 } },
];
const KINDS: MeteringKind[] = ['vm.allocated', 'vm.powered_on', 'vm.powered_off', 'vm.resized', 'vm.deleted'];

/** Records of a few VMs in any order, kinds in any sequence (resizes too), times to the millisecond. */
const records = fc
  .array(
    fc.record({
      vm: fc.constantFrom('v1', 'v2', 'v3', 'v4'),
      kind: fc.constantFrom(...KINDS),
      at: fc.integer({ min: 0, max: 72 * H }),
      flavor: fc.constantFrom(...FLAVORS),
    }),
    { maxLength: 40 },
  )
  .map((drawn) =>
    drawn.map(
      (d, i): MeteringRecord => ({
        event_id: `e-${i}`,
        kind: d.kind,
        project_id: d.vm === 'v4' ? 'p2' : 'p1',
        vm_id: d.vm,
        zone: d.vm === 'v3' ? 'lab' : 'local',
        ...d.flavor,
        effective_at: new Date(T0 + d.at).toISOString(),
      }),
    ),
  );

const period = fc
  .tuple(fc.integer({ min: 0, max: 80 * H }), fc.integer({ min: 1, max: 80 * H }), fc.integer({ min: 0, max: 90 * H }))
  .map(([from, length, now]) => ({
    from: new Date(T0 + from),
    to: new Date(T0 + from + length),
    now: new Date(T0 + now),
  }));

describe("the example billing consumer's calculator", () => {
  it("gives HCP's usage report for any records, period and project", () => {
    fc.assert(
      fc.property(records, period, fc.constantFrom(null, 'p1', 'p2'), (recs, p, project) => {
        const mine = computeUsage(
          recs.filter((r) => project === null || r.project_id === project),
          { from: p.from, to: p.to, until: p.now },
          { detail: true },
        );
        const theirs = usageReport(recs, { ...p, project, detail: true });
        expect(theirs).toEqual({ project, ...mine });
      }),
      { numRuns: 500 },
    );
  });
});
