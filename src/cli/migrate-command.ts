import { parseArgs } from 'node:util';
import { DataSource } from 'typeorm';
import { HcpConfig } from '../config/hcp-config';
import { createDataSource } from '../platform/persistence/data-source';
import { MigrateDownResult, migrateDown, migrateUp } from '../platform/persistence/schema-changes';
import { resolveVersion, SchemaVersions, schemaVersions } from '../platform/persistence/schema-versions';
import { openCliDatabase } from './database';

export const MIGRATE_USAGE = `usage: npm run admin -- migrate status [--output json]
       npm run admin -- migrate up [--to <version>] [--output json]
       npm run admin -- migrate down [--to <version> | --to 0] [--output json]
  <version>: a migration's timestamp (1767398400000) or class name (ProjectQuotas1767398400000)
  up: applies the pending migrations up to <version> (default: all)
  down: reverts the migrations applied after <version> (default: the last one applied);
        the first migration holds the event store and is only reverted by an explicit --to 0
  exit codes: 0 done / in step, 1 failed, 2 usage, 3 behind (pending migrations),
              4 ahead (migrations unknown to this release), 5 down refused`;

/** Exit codes operators and scripts rely on (a deploy step can gate on `migrate status`). */
export const MIGRATE_EXIT = { ok: 0, failed: 1, usage: 2, behind: 3, ahead: 4, refused: 5 } as const;

type Output = 'text' | 'json';

export async function runMigrateCommand(config: HcpConfig, argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'status' && command !== 'up' && command !== 'down') return usage();
  let values: { to?: string; output?: string };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { to: { type: 'string' }, output: { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    return usage((err as Error).message);
  }
  if (values.output !== undefined && values.output !== 'json' && values.output !== 'text')
    return usage(`--output must be json or text`);
  const output: Output = values.output === 'json' ? 'json' : 'text';
  const to = values.to === undefined ? undefined : resolveVersion(values.to);
  if (values.to !== undefined && to === undefined) return usage(`this release has no migration ${values.to}`);
  if (command === 'up' && to === 0) return usage('up --to 0 applies nothing; did you mean down --to 0?');
  if (command === 'status' && values.to !== undefined) return usage('status takes no --to');

  const database = await openCliDatabase(config);
  const db = createDataSource(database.url, { poolSize: 2, applicationName: 'hcp-migrate' });
  try {
    await db.initialize();
    if (command === 'up') {
      const applied = await migrateUp(db, to);
      return await report(
        output,
        { applied },
        applied.map((n) => `applied   ${n}`).join('\n') || 'nothing to apply',
        db,
      );
    }
    if (command === 'down') {
      const result = await migrateDown(db, to);
      if (!result.ok) return refused(output, result);
      const text = result.reverted.map((n) => `reverted  ${n}`).join('\n') || 'nothing to revert';
      return await report(output, { reverted: result.reverted }, text, db);
    }
    return await report(output, {}, '', db);
  } finally {
    if (db.isInitialized) await db.destroy();
    await database.close();
  }
}

/** Prints what was done, then where the schema stands; the exit code says the latter. */
async function report(output: Output, done: Record<string, string[]>, text: string, db: DataSource): Promise<number> {
  const versions = await schemaVersions(db);
  const state = versions.unknown.length ? 'ahead' : versions.pending.length ? 'behind' : 'in_step';
  if (output === 'json') {
    process.stdout.write(`${JSON.stringify({ ...done, state, ...versions })}\n`);
  } else {
    if (text) process.stdout.write(`${text}\n`);
    process.stdout.write(`${describe(state, versions)}\n`);
  }
  // After up or down the schema is where the operator asked, not necessarily at this release's head.
  if (Object.keys(done).length) return MIGRATE_EXIT.ok;
  return MIGRATE_EXIT[state === 'in_step' ? 'ok' : state];
}

function describe(state: 'ahead' | 'behind' | 'in_step', v: SchemaVersions): string {
  const headline = {
    in_step: 'schema: in step with this release',
    behind: `schema: behind this release (${v.pending.length} pending)`,
    ahead: `schema: ahead of this release (${v.unknown.length} applied by another release)`,
  }[state];
  const lines = v.migrations.map((m) => `  ${m.state.padEnd(8)} ${m.version}  ${m.name}`);
  return [headline, ...lines].join('\n');
}

function refused(output: Output, result: Extract<MigrateDownResult, { ok: false }>): number {
  const why = {
    unknown_migrations: 'they were applied by another release; revert them with its hcp',
    event_store: 'it holds the event store; revert it (and every event) only with an explicit --to 0',
    out_of_order: 'they are not the last ones applied; revert step by step',
  }[result.reason];
  if (output === 'json')
    process.stdout.write(`${JSON.stringify({ refused: result.reason, migrations: result.migrations })}\n`);
  else process.stderr.write(`refused to revert ${result.migrations.join(', ')}: ${why}\n`);
  return result.reason === 'unknown_migrations' ? MIGRATE_EXIT.ahead : MIGRATE_EXIT.refused;
}

function usage(problem?: string): number {
  process.stderr.write(`${problem ? `${problem}\n` : ''}${MIGRATE_USAGE}\n`);
  return MIGRATE_EXIT.usage;
}
