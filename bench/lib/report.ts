import { PEERS, type PeerValues } from './peers';
import { round } from './util';

export interface Target {
  /** HCP's figure must be below (`<`) or above (`>`) the value. */
  op: '<' | '>';
  value: number;
}

export interface Row {
  scenario: string;
  metric: string;
  unit: string;
  hcp: number | null;
  baseline: number | null;
  /** The same figure for each peer service of the same run (write and read rows; null: not measured). */
  peers?: PeerValues;
  target?: Target;
  note?: string;
}

export interface ScenarioResult {
  name: string;
  rows: Row[];
  details: Record<string, unknown>;
}

export function verdict(row: Row): 'ok' | 'MISS' | '' {
  if (!row.target || row.hcp === null) return '';
  return (row.target.op === '<' ? row.hcp < row.target.value : row.hcp > row.target.value) ? 'ok' : 'MISS';
}

export function ratio(row: Row): number | null {
  if (row.hcp === null || row.baseline === null || row.baseline === 0) return null;
  const r = row.hcp / row.baseline;
  return Number(r.toPrecision(r < 10 ? 2 : 3));
}

const fmt = (v: number | null): string => {
  if (v === null) return '-';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return String(round(v, Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2));
};

/** A plain-text table (also valid Markdown) of every row. */
export function table(results: ScenarioResult[]): string {
  const header = ['scenario', 'metric', 'target', 'HCP', 'baseline', ...PEERS, 'HCP/baseline', 'verdict', 'note'];
  const lines = results.flatMap((r) =>
    r.rows.map((row) => [
      row.scenario,
      `${row.metric} (${row.unit})`,
      row.target ? `${row.target.op} ${fmt(row.target.value)}` : '',
      fmt(row.hcp),
      fmt(row.baseline),
      ...PEERS.map((p) => fmt(row.peers?.[p] ?? null)),
      ratio(row) === null ? '-' : `${ratio(row)}x`,
      verdict(row),
      row.note ?? '',
    ]),
  );
  return markdownTable(header, lines);
}

/** Cells padded to their column's width: readable as plain text, valid as Markdown. */
export function markdownTable(header: string[], lines: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(line)].join('\n');
}
