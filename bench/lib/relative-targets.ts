import { PEERS } from './peers';
import { markdownTable, type Row } from './report';
import { round } from './util';

/**
 * The performance issue's targets (#21): ratios to the baseline and the Emmett peers of the same run,
 * so a loaded machine moves both sides of each comparison. A figure a run did not measure reads `-`.
 */
export interface RelativeTarget {
  row: string;
  /** What HCP's figure must be, as said in the issue. */
  rule: string;
  hcp: number | null;
  /** The bound this run's figures set; null when a figure it needs is missing. */
  bound: number | null;
  op: '<=' | '>=';
  verdict: 'ok' | 'MISS' | '-';
}

type Find = (rows: Row[]) => Row | undefined;

const row =
  (scenario: (s: string) => boolean, metric: string): Find =>
  (rows) =>
    rows.find((r) => scenario(r.scenario) && r.metric === metric);

/** The largest VM count a read scenario of this kind ran at (100,000 in full mode). */
const largestRead =
  (kind: 'GET /vms/{id}' | 'GET /vms?limit=50', metric: string): Find =>
  (rows) => {
    const size = (s: string) => Number(/@ ([\d,]+) VMs/.exec(s)?.[1]?.replace(/,/g, '') ?? -1);
    return rows
      .filter((r) => r.scenario.startsWith(`read: ${kind} @`) && r.metric === metric)
      .sort((a, b) => size(b.scenario) - size(a.scenario))[0];
  };

const fasterPeer = (r: Row | undefined): number | null => {
  const values = PEERS.map((p) => r?.peers?.[p]).filter((v): v is number => typeof v === 'number');
  return values.length ? Math.max(...values) : null;
};

const times = (v: number | null | undefined, k: number): number | null =>
  v === null || v === undefined ? null : round(v * k, 2);

const writeOne = (s: string) => s === 'write: POST /vms, 100 clients';
const detailRate = largestRead('GET /vms/{id}', 'requests per second');
const detailP99 = largestRead('GET /vms/{id}', 'p99');
const listP99 = largestRead('GET /vms?limit=50', 'p99');
const creates = row(writeOne, '202s per second');
const lag = row((s) => s.startsWith('lag, isolated:'), 'vm-read-model lag p99');
const burst = row(
  (s) => s.startsWith('jobs: 202 -> succeeded,') && s.endsWith('at once'),
  'jobs per second (first 202 -> last done)',
);
const oneAtATime = row((s) => s.startsWith('jobs: 202 -> succeeded, one at a time'), 'visible (GET /jobs) p50');
const rebuild = row((s) => s.startsWith('rebuild vm-read-model:'), 'events per second');

interface Definition {
  row: string;
  rule: string;
  op: '<=' | '>=';
  hcp: (rows: Row[]) => number | null | undefined;
  /** Every bound that applies; HCP must hold all of them (the tightest is shown). */
  bounds: (rows: Row[]) => Array<number | null>;
}

const DEFINITIONS: Definition[] = [
  {
    row: 'write, one project, 100 clients: creates/s',
    rule: '>= 1.5x the faster Emmett peer and >= 0.15x the baseline',
    op: '>=',
    hcp: (rows) => creates(rows)?.hcp,
    bounds: (rows) => [times(fasterPeer(creates(rows)), 1.5), times(creates(rows)?.baseline, 0.15)],
  },
  {
    row: 'write p99',
    rule: "<= 8x the baseline's p99",
    op: '<=',
    hcp: (rows) => row(writeOne, 'p99')(rows)?.hcp,
    bounds: (rows) => [times(row(writeOne, 'p99')(rows)?.baseline, 8)],
  },
  {
    row: 'detail read at the largest size: p99',
    rule: '<= 2x the baseline p99',
    op: '<=',
    hcp: (rows) => detailP99(rows)?.hcp,
    bounds: (rows) => [times(detailP99(rows)?.baseline, 2)],
  },
  {
    row: 'detail read at the largest size: requests/s',
    rule: ">= the faster Emmett peer's rate",
    op: '>=',
    hcp: (rows) => detailRate(rows)?.hcp,
    bounds: (rows) => [fasterPeer(detailRate(rows))],
  },
  {
    row: 'list (50) at the largest size: p99',
    rule: '<= 1.5x the baseline p99',
    op: '<=',
    hcp: (rows) => listP99(rows)?.hcp,
    bounds: (rows) => [times(listP99(rows)?.baseline, 1.5)],
  },
  {
    row: 'peak RSS during the largest reads (largest API process)',
    rule: '<= 150 MB',
    op: '<=',
    hcp: (rows) =>
      Math.max(
        ...[
          largestRead('GET /vms/{id}', 'peak RSS')(rows)?.hcp,
          largestRead('GET /vms?limit=50', 'peak RSS')(rows)?.hcp,
        ].filter((v): v is number => typeof v === 'number'),
        Number.NEGATIVE_INFINITY,
      ),
    bounds: () => [150],
  },
  {
    row: 'isolated lag, vm-read-model p99',
    rule: "<= 4x the baseline projector's",
    op: '<=',
    hcp: (rows) => lag(rows)?.hcp,
    bounds: (rows) => [times(lag(rows)?.baseline, 4)],
  },
  {
    row: 'creates at once: jobs/s, first 202 -> last done',
    rule: '>= 300',
    op: '>=',
    hcp: (rows) => burst(rows)?.hcp,
    bounds: () => [300],
  },
  {
    row: 'one job at a time: visible (GET /jobs) p50',
    rule: '<= 30 ms',
    op: '<=',
    hcp: (rows) => oneAtATime(rows)?.hcp,
    bounds: () => [30],
  },
  {
    row: 'rebuild: events/s',
    rule: '>= 1.0x the bare projector',
    op: '>=',
    hcp: (rows) => rebuild(rows)?.hcp,
    bounds: (rows) => [rebuild(rows)?.baseline ?? null],
  },
];

export function relativeTargets(rows: Row[]): RelativeTarget[] {
  return DEFINITIONS.map((d) => {
    const raw = d.hcp(rows);
    const hcp = typeof raw === 'number' && Number.isFinite(raw) ? raw : null;
    const bounds = d.bounds(rows);
    const known = bounds.filter((b): b is number => b !== null);
    const bound =
      known.length === 0 || known.length < bounds.length
        ? null
        : d.op === '>='
          ? Math.max(...known)
          : Math.min(...known);
    const verdict =
      hcp === null || bound === null ? '-' : (d.op === '>=' ? hcp >= bound : hcp <= bound) ? 'ok' : 'MISS';
    return { row: d.row, rule: d.rule, hcp, bound, op: d.op, verdict };
  });
}

/** The targets as a plain-text (and Markdown) table. */
export function relativeTargetsTable(targets: RelativeTarget[]): string {
  const header = ['target (#21)', 'rule', 'HCP', 'bound this run', 'verdict'];
  const lines = targets.map((t) => [
    t.row,
    t.rule,
    t.hcp === null ? '-' : String(t.hcp),
    t.bound === null ? '-' : `${t.op} ${t.bound}`,
    t.verdict,
  ]);
  return markdownTable(header, lines);
}
