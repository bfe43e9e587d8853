import { EntityManager, EntityTarget, In, ObjectLiteral } from 'typeorm';
import { DomainEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
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
 * evolves them in memory and upserts them in one statement.
 */
export class FoldedStateProjection<S, E extends DomainEvent, R extends FoldedRow<S>> implements RebuildableProjection {
  readonly streamPrefixes: string[];
  readonly tables: string[];

  constructor(
    readonly name: string,
    private readonly streamPrefix: string,
    private readonly entity: EntityTarget<R>,
    private readonly evolve: (state: S | null, event: E, at: string) => S | null,
    private readonly toRow: (state: S, position: bigint) => R,
    table: string,
  ) {
    this.streamPrefixes = [streamPrefix];
    this.tables = [table];
  }

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const repo = tx.getRepository(this.entity);
    const ids = [...new Set(events.map((e) => this.idOf(e.streamId)))];
    const existing = (await repo.find({ where: { id: In(ids) } as never, select: { id: true, state: true, position: true } as never })) as R[];
    const folded = new Map<string, { state: S | null; position: bigint }>(existing.map((r) => [r.id, { state: r.state, position: BigInt(r.position) }]));
    const touched = new Set<string>();
    for (const e of events) {
      const id = this.idOf(e.streamId);
      const current = folded.get(id) ?? { state: null, position: -1n };
      if (e.position <= current.position) continue; // applied before (a rebuild that restarted)
      const next = this.evolve(current.state, e.event as E, e.at);
      folded.set(id, { state: next, position: e.position });
      if (next) touched.add(id);
    }
    const rows = [...touched].map((id) => {
      const { state, position } = folded.get(id)!;
      return this.toRow(state!, position);
    });
    if (rows.length) await repo.upsert(rows as never[], ['id']);
  }

  private idOf(streamId: string): string {
    return streamId.slice(this.streamPrefix.length);
  }
}
