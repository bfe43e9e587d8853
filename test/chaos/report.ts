import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CrashRecord } from './hcp-fleet';
import type { ProviderChaosFigures } from './provider-chaos';
import type { Verdict } from './verify';
import type { LedgerEntry } from './workload';

export interface ScenarioResult {
  id: string;
  title: string;
  instances: number;
  seconds: number;
  /** Set when the suite itself could not run the scenario to its end. */
  error?: string;
  verdict: Verdict;
  crashes: CrashRecord[];
  startFailures: string[];
  recoveries: Array<{ label: string; ms: number }>;
  longestRecoveryMs: number;
  shutdowns: Array<number | null>;
  notes: string[];
  /** Every operation the clients sent, with every answer: the evidence behind the counts. */
  ledger: LedgerEntry[];
  /** Provider chaos: faults injected, drift found and repaired, orphans left (provider scenarios only). */
  provider?: ProviderChaosFigures;
}

export const RESULTS_DIR = path.join(__dirname, 'results');
/** Names this run's files in results/: the JSON report and the HCP logs beside it. */
export const RUN_STAMP = new Date().toISOString().replace(/[:.]/g, '-');

export function writeReport(results: ScenarioResult[], run: { startedAt: Date; mode: string }): string {
  const file = path.join(RESULTS_DIR, `${RUN_STAMP}.json`);
  const body = {
    started_at: run.startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    mode: run.mode,
    passed: results.every(passed),
    scenarios: results,
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  return file;
}

export function passed(r: ScenarioResult): boolean {
  return !r.error && r.verdict.lost === 0 && duplicated(r) === 0 && r.crashes.length === 0 && providerTruthHeld(r);
}

/** Provider chaos: every change behind HCP's back shown, nothing left at the provider that no VM owns. */
function providerTruthHeld(r: ScenarioResult): boolean {
  const p = r.provider;
  return !p || (p.drift_repaired === p.changes_behind_back && p.orphans_left === 0);
}

function duplicated(r: ScenarioResult): number {
  return r.verdict.duplicatedJobs + r.verdict.providerDuplicated;
}

export function printReport(results: ScenarioResult[]): void {
  const columns: Array<[string, (r: ScenarioResult) => string | number]> = [
    ['scenario', (r) => r.id],
    ['s', (r) => r.seconds],
    ['requests', (r) => r.verdict.requests],
    ['202', (r) => r.verdict.accepted],
    ['refused', (r) => sum(r.verdict.refusedByCode)],
    ['gave up', (r) => r.verdict.gaveUp],
    ['done ok', (r) => r.verdict.jobsSucceeded],
    ['failed', (r) => r.verdict.jobsFailed],
    ['open', (r) => r.verdict.unfinished],
    ['lost', (r) => r.verdict.lost],
    ['dup', (r) => duplicated(r)],
    ['extra jobs', (r) => r.verdict.jobsNotInLedger],
    ['orphan@pve', (r) => r.verdict.orphanedAtProvider],
    ['missing@pve', (r) => r.verdict.missingAtProvider],
    ['drift', (r) => r.verdict.powerStateDrift],
    ['crashes', (r) => r.crashes.length],
    ['5xx seen', (r) => fiveHundreds(r)],
    ['recovery s', (r) => (r.longestRecoveryMs / 1000).toFixed(1)],
    ['wait 202 s', (r) => (r.verdict.longestAcceptMs / 1000).toFixed(1)],
    ['held keys', (r) => r.verdict.keysHeldInProgress],
    ['sigterm s', (r) => longestShutdown(r)],
    ['verdict', (r) => (r.error ? 'ERROR' : passed(r) ? 'PASS' : 'FAIL')],
  ];
  const rows = [columns.map(([h]) => h), ...results.map((r) => columns.map(([, f]) => String(f(r))))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => cell.padStart(widths[i]!)).join('  ');
  const out: string[] = ['', line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)];
  for (const r of results) {
    out.push('', `${r.id}: ${r.title} (${r.instances} HCP process(es))`);
    if (r.error) out.push(`  SUITE ERROR: ${r.error.split('\n').slice(0, 3).join(' | ')}`);
    out.push(`  answers: ${fmt(r.verdict.answersByStatus)}`);
    if (sum(r.verdict.refusedByCode) > 0) out.push(`  refused by code: ${fmt(r.verdict.refusedByCode)}`);
    if (r.verdict.jobsFailed > 0) out.push(`  failed jobs by code: ${fmt(r.verdict.failedByCode)}`);
    out.push(
      `  VMs: ${r.verdict.vmsInHcp} live in HCP, ${r.verdict.vmsAtProvider} at the provider; ${r.verdict.vmsInTransition} still in transition`,
    );
    const unrecovered = r.recoveries.filter((x) => x.ms < 0).length;
    out.push(
      `  recoveries (s): ${
        r.recoveries
          .filter((x) => x.ms >= 0)
          .map((x) => (x.ms / 1000).toFixed(1))
          .join(' ') || '-'
      }${unrecovered ? `; ${unrecovered} fault(s) with no answer before the next` : ''}`,
    );
    if (r.shutdowns.length > 0)
      out.push(
        `  SIGTERM exits (s): ${r.shutdowns.map((s) => (s === null ? 'HUNG' : (s / 1000).toFixed(1))).join(' ')}`,
      );
    if (r.provider) out.push(...providerLines(r.provider));
    for (const note of r.notes) out.push(`  note: ${note}`);
    for (const c of r.crashes) out.push(`  CRASH HCP ${c.slot} at ${c.at} (code ${c.code}, signal ${c.signal})`);
    if (r.startFailures.length > 0) out.push(`  ${r.startFailures.length} failed start(s) of HCP`);
    for (const d of r.verdict.details.slice(0, 15)) out.push(`  - ${d}`);
    if (r.verdict.details.length > 15) out.push(`  - ... ${r.verdict.details.length - 15} more in the JSON report`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

function providerLines(p: ProviderChaosFigures): string[] {
  const ms = (v: number | null) => (v === null ? '-' : (v / 1000).toFixed(1));
  return [
    `  provider faults: ${p.faults_injected} (${fmt(p.faults_by_kind) || 'none'})`,
    `  changes behind HCP's back: ${p.changes_behind_back}, shown by HCP: ${p.drift_repaired}; read model disagreed p50 ${ms(p.disagreement_p50_ms)} s, max ${ms(p.disagreement_max_ms)} s`,
    `  drift found by the reconcile loop: ${fmt(p.drift_found_by_kind) || 'none'}`,
    `  orphans left after reconcile: ${p.orphans_left} at the provider, ${p.orphans_listed} listed open`,
  ];
}

function fiveHundreds(r: ScenarioResult): string {
  const s = r.verdict.answersByStatus;
  const n500 = s['500'] ?? 0;
  const n503 = s['503'] ?? 0;
  return `${n500}/${n503}`;
}

function longestShutdown(r: ScenarioResult): string {
  if (r.shutdowns.some((s) => s === null)) return 'HUNG';
  const finite = r.shutdowns.filter((s): s is number => s !== null);
  return finite.length ? (Math.max(...finite) / 1000).toFixed(1) : '-';
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

function fmt(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}
