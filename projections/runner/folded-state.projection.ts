import { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import { DomainEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { BulkInsert } from './bulk-insert';
import { RebuildableProjection } from './projection-rebuild';

/** A read-model row that carries the folded aggregate state and the position it reflects. */
export interface FoldedRow<S> extends ObjectLiteral {
  id: string;
  state: S;
  position: string;
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
  private sql: { select: string; upsert: BulkInsert; columns: Array<[property: string, column: string]> } | undefined;

  constructor(
    readonly name: string,
    private readonly streamPrefix: string,
    private readonly entity: EntityTarget<R>,
    evolve: (state: S | null, event: E, at: string) => S | null,
    private readonly toRow: (state: S, position: bigint) => R,
    private readonly table: string,
    /**
     * Several events of one row at once, with the result of `evolve` one by one: for states that grow
     * with their history (a project's reservations), where `evolve` copies the state on every event.
     */
    private readonly evolveAll: (state: S | null, events: ReadonlyArray<{ event: E; at: string }>) => S | null = (
      state,
      events,
    ) => events.reduce<S | null>((s, { event, at }) => evolve(s, event, at), state),
  ) {
    this.streamPrefixes = [streamPrefix];
    this.tables = [table];
  }

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const ids = [...new Set(events.map((e) => this.idOf(e.streamId)))];
    const sql = this.sqlFor(tx);
    const existing: Array<{ id: string; state: S; position: string }> = await tx.query(sql.select, [ids]);
    const folded = new Map<string, { state: S | null; position: bigint }>(
      existing.map((r) => [r.id, { state: r.state, position: BigInt(r.position) }]),
    );
    const pending = new Map<string, { events: Array<{ event: E; at: string }>; position: bigint }>();
    for (const e of events) {
      const id = this.idOf(e.streamId);
      const row = pending.get(id) ?? { events: [], position: folded.get(id)?.position ?? -1n };
      if (e.position <= row.position) continue; // applied before (a rebuild that restarted)
      row.events.push({ event: e.event as E, at: e.at });
      row.position = e.position;
      pending.set(id, row);
    }
    const rows: Array<Record<string, unknown>> = [];
    for (const [id, { events: rowEvents, position }] of pending) {
      const state = this.evolveAll(folded.get(id)?.state ?? null, rowEvents);
      if (!state) continue;
      const row = this.toRow(state, position);
      rows.push(Object.fromEntries(sql.columns.map(([property, column]) => [column, row[property]])));
    }
    await sql.upsert.run(tx, rows);
  }

  /** The statements, built once from the entity's columns as TypeORM maps them (property `id` may be another column). */
  private sqlFor(tx: EntityManager): NonNullable<FoldedStateProjection<S, E, R>['sql']> {
    if (!this.sql) {
      const metadata = tx.connection.getMetadata(this.entity);
      const column = (property: string) => `"${metadata.findColumnWithPropertyName(property)!.databaseName}"`;
      this.sql = {
        select: `SELECT ${column('id')} AS id, ${column('state')} AS state, ${column('position')} AS position FROM "${this.table}" WHERE ${column('id')} = ANY($1)`,
        upsert: new BulkInsert({
          name: this.table,
          columns: Object.fromEntries(
            metadata.columns.map((c) => [c.databaseName, tx.connection.driver.normalizeType(c)]),
          ),
          key: metadata.primaryColumns.map((c) => c.databaseName),
          onConflict: 'update',
        }),
        columns: metadata.columns.map((c) => [c.propertyName, c.databaseName]),
      };
    }
    return this.sql;
  }

  private idOf(streamId: string): string {
    return streamId.slice(this.streamPrefix.length);
  }
}
