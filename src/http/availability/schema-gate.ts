import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { schemaStatus } from '../../platform/persistence/data-source';
import { MIGRATIONS } from '../../platform/persistence/migrations';
import { UnavailableError } from '../../platform/availability/unavailable-error';

/** How often the schema is compared with the code while nothing asks sooner. */
export const SCHEMA_CHECK_INTERVAL_MS = 5000;
/** Least time between two checks a refused write asks for, so a burst of writes costs one query. */
const RECHECK_AFTER_REFUSAL_MS = 1000;

/** The code's latest migration: the version of the schema this release writes. */
const CODE_VERSION = MIGRATIONS[MIGRATIONS.length - 1].name;

/**
 * Refuses writes while the database's schema is not the one this release was built for (migrations
 * pending, or applied by a newer release): they would fail half-way or write what the other schema does
 * not expect. Reads go on. The status is cached and refreshed in the background, and soon after a
 * refusal, so the gate costs no query per request and lifts within seconds of a migration.
 */
@Injectable()
export class SchemaGate implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('schema');
  private refusal: UnavailableError | null = null;
  private checking: Promise<void> | null = null;
  private checkedAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly dataSource: DataSource) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), SCHEMA_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** Why a write must be refused now, or null. */
  writeRefusal(): UnavailableError | null {
    if (this.refusal && Date.now() - this.checkedAt >= RECHECK_AFTER_REFUSAL_MS) void this.refresh();
    return this.refusal;
  }

  /** Compares the database with the code; while the database cannot be reached, the last answer stands. */
  refresh(): Promise<void> {
    this.checking ??= this.check().finally(() => {
      this.checking = null;
      this.checkedAt = Date.now();
    });
    return this.checking;
  }

  private async check(): Promise<void> {
    let refusal: UnavailableError | null = null;
    try {
      const status = await schemaStatus(this.dataSource);
      if (!status.ok) refusal = mismatch(status.reason, await this.databaseVersion());
    } catch {
      return;
    }
    if (!!refusal !== !!this.refusal)
      this.logger.warn(
        refusal ? `refusing writes: ${refusal.message}` : 'the schema matches the code again: writes accepted',
      );
    this.refusal = refusal;
  }

  private async databaseVersion(): Promise<string | null> {
    const rows: Array<{ name: string }> = await this.dataSource.query(
      `SELECT name FROM schema_migrations ORDER BY "timestamp" DESC, id DESC LIMIT 1`,
    );
    return rows[0]?.name ?? null;
  }
}

function mismatch(
  reason: 'pending_migrations' | 'unknown_migrations',
  databaseVersion: string | null,
): UnavailableError {
  const database = databaseVersion ?? 'no migration';
  const message =
    reason === 'pending_migrations'
      ? `HCP's database schema is behind this release (database at ${database}, code at ${CODE_VERSION}): writes are refused until the migrations are applied`
      : `HCP's database schema is ahead of this release (database at ${database}, code at ${CODE_VERSION}): writes are refused until HCP runs the release that matches it`;
  return new UnavailableError('schema', message, {
    dependency: 'database',
    reason,
    code_version: CODE_VERSION,
    database_version: databaseVersion,
  });
}
