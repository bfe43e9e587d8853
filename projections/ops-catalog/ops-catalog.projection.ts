import { EntityManager } from 'typeorm';
import { evolveOpsResource, OPS_STREAM_PREFIXES, opsKindOf, OpsResourceEvent, OpsResourceState } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { RebuildableProjection } from '../runner/projection-rebuild';
import { OpsResourceRow } from './ops-resource.entity';

/**
 * The ops catalog read model: every provider, cluster, zone, image and flavor, folded by the domain's
 * own evolve. Deleted resources stay as rows marked deleted (their ids stay taken).
 */
export class OpsCatalogProjection implements RebuildableProjection {
  readonly name = 'ops-catalog';
  readonly tables = ['ops_resources'];
  readonly streamPrefixes = OPS_STREAM_PREFIXES;

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const repo = tx.getRepository(OpsResourceRow);
    const folded = new Map<string, { state: OpsResourceState | null; position: bigint }>();
    for (const e of events) {
      const kind = opsKindOf(e.streamId);
      if (!kind) continue;
      const id = e.streamId.slice(kind.length + 1);
      const key = `${kind}/${id}`;
      if (!folded.has(key)) {
        const row = await repo.findOne({ where: { kind, id } });
        folded.set(key, { state: row ? toState(row) : null, position: row ? BigInt(row.position) : -1n });
      }
      const current = folded.get(key)!;
      if (e.position <= current.position) continue;
      folded.set(key, {
        state: evolveOpsResource(kind)(current.state, e.event as OpsResourceEvent<typeof kind>, e.at),
        position: e.position,
      });
    }
    const rows = [...folded.values()].filter((f) => f.state).map(({ state, position }) => toRow(state!, position));
    if (rows.length) await repo.upsert(rows as never[], ['kind', 'id']);
  }
}

function toState(row: OpsResourceRow): OpsResourceState {
  return {
    kind: row.kind,
    id: row.id,
    spec: row.spec as never,
    deleted: row.deleted,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function toRow(state: OpsResourceState, position: bigint): OpsResourceRow {
  return {
    kind: state.kind,
    id: state.id,
    name: (state.spec as { name?: string }).name ?? state.id,
    spec: state.spec as unknown as Record<string, unknown>,
    deleted: state.deleted,
    created_at: new Date(state.created_at),
    updated_at: new Date(state.updated_at),
    position: position.toString(),
  };
}
