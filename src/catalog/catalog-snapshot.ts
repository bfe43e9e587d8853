import { DataSource } from 'typeorm';
import { Capabilities, OpsKind } from '@hcp/domain';
import { DriverRegistry, OpsResource } from '../ops';

interface CatalogRow {
  kind: OpsKind;
  id: string;
  spec: Record<string, unknown>;
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
  position: string;
}

/**
 * The ops catalog read model at one version, in memory. The version is the highest event position of
 * its rows: the projection rewrites a row only with a newer event, so any change to any provider,
 * cluster, zone, image or flavor moves it, and a snapshot of the same version is the same data.
 */
export class CatalogSnapshot {
  private readonly live = new Map<string, OpsResource<OpsKind>>();
  /** Live resources per kind, in the order of their names (the order the SQL lists gave). */
  private readonly byKind = new Map<OpsKind, Array<OpsResource<OpsKind>>>();
  private readonly capabilities = new Map<string, Promise<Capabilities>>();

  constructor(
    readonly version: bigint,
    rows: CatalogRow[],
    private readonly drivers: DriverRegistry,
  ) {
    for (const row of rows) {
      if (row.deleted) continue;
      const resource = {
        id: row.id,
        spec: row.spec as never,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      };
      this.live.set(`${row.kind}/${row.id}`, resource);
      const list = this.byKind.get(row.kind) ?? [];
      list.push(resource);
      this.byKind.set(row.kind, list);
    }
  }

  all<K extends OpsKind>(kind: K): Array<OpsResource<K>> {
    return (this.byKind.get(kind) ?? []) as Array<OpsResource<K>>;
  }

  find<K extends OpsKind>(kind: K, id: string): OpsResource<K> | null {
    return (this.live.get(`${kind}/${id}`) as OpsResource<K> | undefined) ?? null;
  }

  /** Live resources of `kind` among `ids`, ordered by name. */
  list<K extends OpsKind>(kind: K, ids: string[]): Array<OpsResource<K>> {
    const wanted = new Set(ids);
    return this.all(kind).filter((r) => wanted.has(r.id));
  }

  /**
   * A cluster's capabilities, asked of the driver registry once per snapshot: they follow from the
   * provider's and the cluster's specs, and a change to either is a new snapshot. A failure is not kept.
   */
  clusterCapabilities(providerId: string, clusterId: string): Promise<Capabilities> {
    const key = `${providerId}/${clusterId}`;
    let found = this.capabilities.get(key);
    if (!found) {
      found = this.drivers.clusterCapabilities(providerId, clusterId);
      this.capabilities.set(key, found);
      found.catch(() => this.capabilities.delete(key));
    }
    return found;
  }
}

/**
 * Hands out the catalog snapshot of the read model's current version. Each caller pays one small
 * query for the version (so a resource changed a moment ago, by this process or another, is seen as
 * soon as the read model has it) instead of the handful of reads the resolution of a create needs.
 */
export class CatalogSnapshots {
  private last: CatalogSnapshot | null = null;
  private loading: Promise<CatalogSnapshot> | null = null;

  constructor(
    private readonly db: DataSource,
    private readonly drivers: DriverRegistry,
  ) {}

  /** The snapshot last loaded, possibly stale: only to start work that `current` then confirms. */
  peek(): CatalogSnapshot | null {
    return this.last;
  }

  /** The snapshot of `version` (from `versionQuery`) or newer. */
  async atLeast(version: bigint): Promise<CatalogSnapshot> {
    if (this.last && this.last.version >= version) return this.last;
    const loaded = await this.load();
    // Loads started before `version` was read may still answer older: load again, once.
    return loaded.version >= version ? loaded : this.load();
  }

  async current(): Promise<CatalogSnapshot> {
    const [row] = await this.db.query(`SELECT ${CatalogSnapshots.versionSql} AS version`);
    return this.atLeast(BigInt(row.version));
  }

  /** SQL of the version, to be read together with other data in one statement. */
  static readonly versionSql = `(SELECT coalesce(max(position), -1) FROM ops_resources)::text`;

  private load(): Promise<CatalogSnapshot> {
    // Concurrent callers share one load.
    this.loading ??= this.db
      .query(`SELECT kind, id, spec, deleted, created_at, updated_at, position FROM ops_resources ORDER BY kind, name`)
      .then((rows: CatalogRow[]) => {
        const snapshot = new CatalogSnapshot(
          rows.reduce((max, r) => (BigInt(r.position) > max ? BigInt(r.position) : max), -1n),
          rows,
          this.drivers,
        );
        if (!this.last || snapshot.version > this.last.version) this.last = snapshot;
        return snapshot;
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }
}
