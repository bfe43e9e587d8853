import type { DataSource } from 'typeorm';
import type { Capabilities } from '@hcp/domain';
import type { DriverRegistry, OpsCatalogQueries } from '../ops';
import { CatalogService } from './catalog.service';

const AT = new Date('2030-01-01T00:00:00Z');

/** ops_resources and cluster_usage as CatalogService's statements see them, with the version reads counted. */
class FakeCatalogDb {
  readonly versionReads: string[][] = [];
  usage: Record<string, { vcpus: number; ram_mb: number; disk_gb: number }> = {};
  private readonly rows = [
    ['zone', 'z1', { name: 'one', policy: 'spread', cluster_ids: ['c1'] }],
    ['zone', 'z2', { name: 'two', policy: 'spread', cluster_ids: ['c2'] }],
    [
      'cluster',
      'c1',
      { name: 'c1', provider_id: 'p', enabled: true, capacity: { vcpus: 4, ram_mb: 4096, disk_gb: 100 } },
    ],
    ['cluster', 'c2', { name: 'c2', provider_id: 'p', enabled: true, capacity: null }],
    [
      'image',
      'debian',
      {
        name: 'debian',
        visibility: 'public',
        min_disk_gb: 1,
        min_ram_mb: 256,
        provider_refs: { c1: 'tmpl-1', c2: 'tmpl-2' },
      },
    ],
    ['flavor', 'small', { name: 'small', vcpus: 1, ram_mb: 1024, disk_gb: 10 }],
  ].map(([kind, id, spec], i) => ({
    kind,
    id,
    spec,
    deleted: false,
    created_at: AT,
    updated_at: AT,
    position: String(i),
  }));

  readonly db = {
    query: async (sql: string, params: unknown[] = []) => {
      await new Promise((r) => setImmediate(r)); // a round trip: calls made meanwhile queue behind it
      const usageOf = (ids: string[]) =>
        ids.filter((id) => this.usage[id]).map((id) => ({ cluster_id: id, ...this.usage[id] }));
      if (sql.includes('max(position)')) {
        this.versionReads.push(params[0] as string[]);
        return [{ version: String(this.rows.length - 1), usage: usageOf(params[0] as string[]) }];
      }
      if (sql.includes('FROM ops_resources')) return this.rows;
      return usageOf(params[0] as string[]);
    },
  } as unknown as DataSource;
}

describe('CatalogService resolving creates', () => {
  let table: FakeCatalogDb;
  let catalog: CatalogService;

  beforeEach(() => {
    table = new FakeCatalogDb();
    const drivers = { clusterCapabilities: async () => ({}) as Capabilities } as unknown as DriverRegistry;
    catalog = new CatalogService({} as OpsCatalogQueries, drivers, table.db);
  });

  it('reads the catalog version and usage once for the creates asking while a read is in flight', async () => {
    await catalog.resolveForCreate('z1', 'debian', 'small'); // the snapshot is loaded
    table.versionReads.length = 0;

    const placed = await Promise.all(
      ['z1', 'z2', 'z1', 'z2', 'z1'].map((zone) => catalog.resolveForCreate(zone, 'debian', 'small')),
    );

    expect(placed.map((p) => p.placement.cluster_id)).toEqual(['c1', 'c2', 'c1', 'c2', 'c1']);
    expect(table.versionReads).toHaveLength(2); // the first alone, the four asking meanwhile together
    expect(new Set(table.versionReads[1])).toEqual(new Set(['c1', 'c2']));
  });

  it('places each create by the usage read after it asked', async () => {
    await catalog.resolveForCreate('z1', 'debian', 'small');
    table.usage.c1 = { vcpus: 4, ram_mb: 4096, disk_gb: 100 };

    await expect(catalog.resolveForCreate('z1', 'debian', 'small')).rejects.toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: { reasons: { no_free_capacity: 1 } },
    });
  });
});
