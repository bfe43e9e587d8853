/**
 * The chaos suite (issue #14): real HCP processes, their own PostgreSQL and a Proxmox simulator process,
 * a stream of random tenant operations, and faults: SIGKILLs, PostgreSQL killed, sessions terminated,
 * SIGTERMs, three instances with one killed, a poison event. Then a settle period and a count of what was
 * lost, duplicated or orphaned.
 *
 *   node scripts/ts-run.js test/chaos/run.ts [--short] [--only <scenario,...>] [--ts-node]
 *
 * Exits 1 when anything was lost or duplicated or an HCP process crashed; 2 when the suite could not run a
 * scenario to its end (the others still run) or could not run at all.
 */
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { freePort } from '../support/hcp-process';
import { ChaosPostgres } from './chaos-postgres';
import { buildHcp } from './build';
import { killEverything, trackFolder } from './children';
import { passed, printReport, type ScenarioResult, writeReport } from './report';
import { runScenario } from './scenario-run';
import { SCENARIOS } from './scenarios';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const short = args.includes('--short');
  const onlyArg = args.indexOf('--only');
  const only = onlyArg >= 0 ? (args[onlyArg + 1] ?? '').split(',') : undefined;
  const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.id));
  const startedAt = new Date();

  const root = mkdtempSync(path.join(tmpdir(), 'hcp-chaos-'));
  trackFolder(root);
  // The embedded PostgreSQL runs as "postgres" when we are root, and must be able to enter the folder.
  chmodSync(root, 0o755);
  const postgres = new ChaosPostgres(path.join(root, 'pg'), await freePort());
  log(`PostgreSQL of the run on 127.0.0.1:${postgres.port} (${root})`);
  await postgres.start();

  let buildDir: string | undefined;
  if (!args.includes('--ts-node')) {
    log('compiling HCP once for the run');
    buildDir = buildHcp();
  }

  const results: ScenarioResult[] = [];
  try {
    for (const [i, scenario] of scenarios.entries()) {
      log(`scenario ${scenario.id}: ${scenario.title}`);
      results.push(await runScenario(scenario, { index: i, root, postgres, long: !short, log, buildDir }));
    }
  } finally {
    await postgres.stop();
  }
  const file = writeReport(results, { startedAt, mode: short ? 'short' : 'long' });
  printReport(results);
  log(`report written to ${file}`);
  if (results.some((r) => r.error)) return 2;
  return results.some((r) => !passed(r)) ? 1 : 0;
}

function log(message: string): void {
  process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

main().then(
  (code) => {
    killEverything();
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(
      `chaos suite failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    killEverything();
    process.exit(2);
  },
);
