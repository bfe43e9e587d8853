import { DataSource, Migration, MigrationExecutor } from 'typeorm';
import { withMigrationLock } from './migrate';
import { CODE_MIGRATIONS, schemaVersions } from './schema-versions';

/** TypeORM's executor, applying only the migrations up to a version (it knows no target of its own). */
class MigrationExecutorUpTo extends MigrationExecutor {
  constructor(
    dataSource: DataSource,
    private readonly upTo: number,
  ) {
    super(dataSource);
    this.transaction = 'each';
  }

  protected override getMigrations(): Migration[] {
    return super.getMigrations().filter((m) => m.timestamp <= this.upTo);
  }
}

/** Applies this release's pending migrations up to `upTo` (default all), each in its own transaction. */
export async function migrateUp(dataSource: DataSource, upTo = Number.POSITIVE_INFINITY): Promise<string[]> {
  return withMigrationLock(dataSource, async () => {
    const applied = await new MigrationExecutorUpTo(dataSource, upTo).executePendingMigrations();
    return applied.map((m) => m.name);
  });
}

export type MigrateDownResult =
  | { ok: true; reverted: string[] }
  | {
      ok: false;
      /**
       * unknown_migrations: applied by another release, whose code alone can revert them;
       * event_store: the first migration holds the event log, the only data nothing can rebuild, so
       * only an explicit `--to 0` reverts it;
       * out_of_order: the migrations to revert were not the last ones applied.
       */
      reason: 'unknown_migrations' | 'event_store' | 'out_of_order';
      migrations: string[];
    };

/**
 * Reverts the applied migrations newer than `to`, last applied first, each in its own transaction; with
 * no `to`, the last one applied. Refuses before reverting anything rather than stop half-way.
 */
export async function migrateDown(dataSource: DataSource, to?: number): Promise<MigrateDownResult> {
  return withMigrationLock(dataSource, async () => {
    const { migrations, appliedOrder } = await schemaVersions(dataSource);
    const applied = migrations.filter((m) => m.state !== 'pending');
    const targets =
      to === undefined
        ? applied.filter((m) => m.name === appliedOrder[appliedOrder.length - 1])
        : applied.filter((m) => m.version > to);
    const refusal = refuseDown(targets, appliedOrder, to);
    if (refusal) return refusal;
    const reverted: string[] = [];
    for (let i = 0; i < targets.length; i++) {
      reverted.push(appliedOrder[appliedOrder.length - 1 - i]);
      await dataSource.undoLastMigration({ transaction: 'each' });
    }
    return { ok: true, reverted };
  });
}

function refuseDown(
  targets: Array<{ name: string; state: string }>,
  appliedOrder: string[],
  to: number | undefined,
): MigrateDownResult | undefined {
  const unknown = targets.filter((m) => m.state === 'unknown').map((m) => m.name);
  if (unknown.length) return { ok: false, reason: 'unknown_migrations', migrations: unknown };
  const first = CODE_MIGRATIONS[0].name;
  if (to !== 0 && targets.some((m) => m.name === first))
    return { ok: false, reason: 'event_store', migrations: [first] };
  const names = new Set(targets.map((m) => m.name));
  const lastApplied = appliedOrder.slice(appliedOrder.length - targets.length);
  if (!lastApplied.every((n) => names.has(n)))
    return { ok: false, reason: 'out_of_order', migrations: targets.map((m) => m.name) };
  return undefined;
}
