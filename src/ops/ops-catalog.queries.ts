import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { notFound, OpsKind, OpsSpecs } from '@hcp/domain';
import { OpsResourceRow } from '@hcp/projections';

export interface OpsResource<K extends OpsKind> {
  id: string;
  spec: OpsSpecs[K];
  created_at: string;
  updated_at: string;
}

/** Reads of the ops catalog read model (live resources only unless asked otherwise). */
@Injectable()
export class OpsCatalogQueries {
  constructor(private readonly db: DataSource) {}

  async find<K extends OpsKind>(kind: K, id: string): Promise<OpsResource<K> | null> {
    const row = await this.db.getRepository(OpsResourceRow).findOne({ where: { kind, id, deleted: false } });
    return row ? toResource<K>(row) : null;
  }

  async get<K extends OpsKind>(kind: K, id: string): Promise<OpsResource<K>> {
    const found = await this.find(kind, id);
    if (!found) throw notFound(kind);
    return found;
  }

  async list<K extends OpsKind>(
    kind: K,
    where: { specContains?: Record<string, unknown>; ids?: string[] } = {},
  ): Promise<Array<OpsResource<K>>> {
    const qb = this.db
      .getRepository(OpsResourceRow)
      .createQueryBuilder('r')
      .where('r.kind = :kind AND NOT r.deleted', { kind })
      .orderBy('r.name', 'ASC');
    if (where.specContains) qb.andWhere('r.spec @> :contains::jsonb', { contains: JSON.stringify(where.specContains) });
    if (where.ids) qb.andWhere('r.id IN (:...ids)', { ids: where.ids.length ? where.ids : ['\u0000'] });
    return (await qb.getMany()).map((r) => toResource<K>(r));
  }

  /** Whether a live resource of this kind already has this name (other than `exceptId`). */
  async nameTaken(kind: OpsKind, name: string, exceptId?: string): Promise<boolean> {
    const rows = await this.db.query(
      `SELECT id FROM ops_resources WHERE kind = $1 AND name = $2 AND NOT deleted AND id <> $3 LIMIT 1`,
      [kind, name, exceptId ?? ''],
    );
    return rows.length > 0;
  }

  /** Live resources of `kind` whose spec contains `fragment` (references between resources). */
  async referencing(kind: OpsKind, fragment: Record<string, unknown>): Promise<string[]> {
    const rows = await this.db.query(
      `SELECT id FROM ops_resources WHERE kind = $1 AND NOT deleted AND spec @> $2::jsonb`,
      [kind, JSON.stringify(fragment)],
    );
    return rows.map((r: { id: string }) => r.id);
  }
}

function toResource<K extends OpsKind>(row: OpsResourceRow): OpsResource<K> {
  return {
    id: row.id,
    spec: row.spec as unknown as OpsSpecs[K],
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
