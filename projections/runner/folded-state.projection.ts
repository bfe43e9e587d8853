import { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import { DomainEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { LRUCache } from 'lru-cache';
import { BulkInsert, BulkStatement, EXPECTED, GuardedBulkUpdate } from './bulk-insert';
import { OneStatementBatch } from './projection';
import { RebuildableProjection } from './projection-rebuild';

/** A read-model row that carries the folded aggregate state and the position it reflects. */
export interface FoldedRow<S> extends ObjectLiteral {
  id: string;
  state: S;
  position: string;
}

/** One aggregate's row as a batch leaves it. */
interface Folded<S> {
  id: string;
  state: S;
  position: bigint;
  /** The position of the row the batch started from; -1 when there was none. */
  previous: bigint;
  /** The row by column name, as the bulk statements take it. */
  columns: Record<string, unknown>;
}

/**
 * A read model with one row per aggregate, folded by the domain's own `evolve` so the read side can
 * never disagree with the write side about a transition. A batch loads the rows it touches once,
 * evolves them in memory and upserts them in one statement (plain SQL: the ORM's upsert cost more CPU
 * than everything else in a rebuild).
 */
export class FoldedStateProjection<S, E extends DomainEvent, R extends FoldedRow<S>> implements RebuildableProjection {
  readonly streamPrefixes: string[];
  readonly tables: string[];
  /** `oneStatement` answers from `written` alone, which holds the rows as its answers so far leave them. */
  readonly statementsAhead = true;
  private sql:
    | {
        select: string;
        upsert: BulkInsert;
        insertIfAbsent: BulkInsert;
        guardedUpdate: GuardedBulkUpdate;
        columns: Array<[property: string, column: string]>;
      }
    | undefined;
  /**
   * The rows this projection wrote last, or answered a statement for, by id (a statement's rows are
   * remembered as it is built, so the runner can build the next batch's while this one is being written).
   * A batch whose rows are all here skips reading them back:
   * it overwrites them guarded by the position it remembers, as one statement that also moves the
   * checkpoint (`oneStatement`: one round trip instead of a transaction of a read and a write; in a live
   * process most batches are the next event of aggregates it has just written). A row anyone
   * else wrote since (a dead letter retried by another process, a rebuild, a transaction of ours that
   * rolled back after writing) fails the guard and is read and folded again.
   */
  private readonly written: LRUCache<string, { state: S; position: bigint }>;

  constructor(
    readonly name: string,
    private readonly streamPrefix: string,
    private readonly entity: EntityTarget<R>,
    private readonly evolve: (state: S | null, event: E, at: string) => S | null,
    private readonly toRow: (state: S, position: bigint) => R,
    private readonly table: string,
    /** Rows remembered (`written`): the live working set, not the table. */
    writtenCacheSize = 1_000,
  ) {
    this.streamPrefixes = [streamPrefix];
    this.tables = [table];
    this.written = new LRUCache({ max: writtenCacheSize });
  }

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const ids = [...new Set(events.map((e) => this.idOf(e.streamId)))];
    const sql = this.sqlFor(tx);
    const existing: Array<{ id: string; state: S; position: string }> = await tx.query(sql.select, [ids]);
    const folded = this.fold(
      events,
      new Map(existing.map((r) => [r.id, { state: r.state, position: BigInt(r.position) }])),
    );
    await sql.upsert.run(
      tx,
      folded.map((f) => f.columns),
    );
    // Remembered before the COMMIT, which may still fail: the guard of the next one-statement batch finds out.
    this.remember(folded);
  }

  /**
   * A batch as one statement, without reading its rows first, when each row is one this projection
   * remembers writing (overwritten where it still holds the remembered position) or one the batch starts
   * (its aggregate's first event: inserted where there is none). Only for events after what it remembers:
   * a replay (after a restart, or a transaction that failed at its COMMIT) may be of rows the table never
   * kept, which only the table can tell. A row the table holds otherwise makes the statement write fewer
   * rows than it counts on, and the batch goes through `apply`.
   */
  oneStatement(events: DecodedEvent[]): OneStatementBatch | null {
    if (!this.sql || events.length === 0) return null;
    const from = new Map<string, { state: S | null; position: bigint }>();
    for (const e of events) {
      const id = this.idOf(e.streamId);
      if (from.has(id)) continue;
      const row = this.written.get(id) ?? (e.revision === 0n ? { state: null, position: -1n } : undefined);
      if (!row || row.position >= e.position) return null;
      from.set(id, row);
    }
    const folded = this.fold(events, from);
    if (folded.length === 0) return null;
    const known = folded.filter((f) => f.previous >= 0n);
    const started = folded.filter((f) => f.previous < 0n);
    // Each statement's parameters are numbered on from those of the statements before it.
    const statements: string[] = [];
    const params: unknown[] = [];
    const add = (part: BulkStatement) => {
      statements.push(part.sql);
      params.push(...part.params);
    };
    if (known.length > 0)
      add(
        this.sql.guardedUpdate.statement(
          known.map((f) => ({ ...f.columns, [EXPECTED]: f.previous.toString() })),
          params.length + 1,
        ),
      );
    if (started.length > 0)
      add(
        this.sql.insertIfAbsent.statement(
          started.map((f) => f.columns),
          params.length + 1,
        ),
      );
    this.remember(folded);
    return {
      statements,
      params,
      rows: folded.length,
      committed: () => undefined,
      // A row someone else wrote since (or that a rolled-back transaction of ours never did, or a row the
      // table had before its first event came round again): `apply` reads them all.
      refused: () => {
        for (const f of folded) this.written.delete(f.id);
      },
    };
  }

  private remember(folded: Folded<S>[]): void {
    for (const f of folded) this.written.set(f.id, { state: f.state, position: f.position });
  }

  /** The rows `events` make of the rows they start from (`from`, by id; absent: no row yet). */
  private fold(events: DecodedEvent[], from: Map<string, { state: S | null; position: bigint }>): Folded<S>[] {
    const pending = new Map<string, { events: Array<{ event: E; at: string }>; position: bigint }>();
    for (const e of events) {
      const id = this.idOf(e.streamId);
      const row = pending.get(id) ?? { events: [], position: from.get(id)?.position ?? -1n };
      if (e.position <= row.position) continue; // applied before (a rebuild that restarted)
      row.events.push({ event: e.event as E, at: e.at });
      row.position = e.position;
      pending.set(id, row);
    }
    const columns = this.sql!.columns;
    const rows: Folded<S>[] = [];
    for (const [id, { events: rowEvents, position }] of pending) {
      const start = from.get(id);
      const state = rowEvents.reduce<S | null>((s, { event, at }) => this.evolve(s, event, at), start?.state ?? null);
      if (!state) continue;
      const row = this.toRow(state, position);
      rows.push({
        id,
        state,
        position,
        previous: start?.position ?? -1n,
        columns: Object.fromEntries(columns.map(([property, column]) => [column, row[property]])),
      });
    }
    return rows;
  }

  /** The statements, built once from the entity's columns as TypeORM maps them (property `id` may be another column). */
  private sqlFor(tx: EntityManager): NonNullable<FoldedStateProjection<S, E, R>['sql']> {
    if (!this.sql) {
      const metadata = tx.connection.getMetadata(this.entity);
      const column = (property: string) => `"${metadata.findColumnWithPropertyName(property)!.databaseName}"`;
      const table = {
        name: this.table,
        columns: Object.fromEntries(
          metadata.columns.map((c) => [c.databaseName, tx.connection.driver.normalizeType(c)]),
        ),
        key: metadata.primaryColumns.map((c) => c.databaseName),
      };
      this.sql = {
        select: `SELECT ${column('id')} AS id, ${column('state')} AS state, ${column('position')} AS position FROM "${this.table}" WHERE ${column('id')} = ANY($1)`,
        upsert: new BulkInsert({ ...table, onConflict: 'update' }),
        insertIfAbsent: new BulkInsert({ ...table, onConflict: 'nothing' }),
        guardedUpdate: new GuardedBulkUpdate(table, metadata.findColumnWithPropertyName('position')!.databaseName),
        columns: metadata.columns.map((c) => [c.propertyName, c.databaseName]),
      };
    }
    return this.sql;
  }

  private idOf(streamId: string): string {
    return streamId.slice(this.streamPrefix.length);
  }
}
