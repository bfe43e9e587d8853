import type { DataSource } from 'typeorm';
import type { Capabilities } from '@hcp/domain';
import type { DriverRegistry } from '../ops';
import { CatalogSnapshots } from './catalog-snapshot';

/** The ops_resources table as the snapshot query sees it, and a count of the loads. */
class FakeCatalogTable {
  rows: Array<{
    kind: string;
    id: string;
    name: string;
    spec: Record<string, unknown>;
    deleted: boolean;
    position: string;
  }> = [];
  loads = 0;
  private position = 0;

  put(kind: string, id: string, spec: Record<string, unknown>, deleted = false): void {
    this.position += 1;
    this.rows = this.rows.filter((r) => !(r.kind === kind && r.id === id));
    this.rows.push({ kind, id, name: String(spec.name ?? id), spec, deleted, position: String(this.position) });
  }

  readonly db = {
    query: async (sql: string) => {
      if (sql.includes('max(position)'))
        return [{ version: String(Math.max(-1, ...this.rows.map((r) => Number(r.position)))) }];
      this.loads += 1;
      const at = new Date('2030-01-01T00:00:00Z');
      return [...this.rows]
        .sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : 1) : a.kind < b.kind ? -1 : 1))
        .map((r) => ({ ...r, created_at: at, updated_at: at }));
    },
  } as unknown as DataSource;
}

describe('CatalogSnapshots', () => {
  let table: FakeCatalogTable;
  let capabilityAsks: number;
  let failCapabilities: boolean;
  let snapshots: CatalogSnapshots;

  beforeEach(() => {
    table = new FakeCatalogTable();
    capabilityAsks = 0;
    failCapabilities = false;
    const drivers = {
      clusterCapabilities: async () => {
        capabilityAsks += 1;
        if (failCapabilities) throw new Error('provider stream unreadable');
        return { reboot: true } as unknown as Capabilities;
      },
    } as unknown as DriverRegistry;
    snapshots = new CatalogSnapshots(table.db, drivers);
    table.put('flavor', 'f1', { name: 'small', ram_mb: 1024 });
    table.put('zone', 'z1', { name: 'zone-1', cluster_ids: ['c2', 'c1'] });
    table.put('cluster', 'c1', { name: 'b-cluster', provider_id: 'p1' });
    table.put('cluster', 'c2', { name: 'a-cluster', provider_id: 'p1' });
  });

  it('reads the catalog once while it does not change', async () => {
    const first = await snapshots.current();
    expect(await snapshots.current()).toBe(first);
    expect(table.loads).toBe(1);
  });

  it('sees a flavor changed a moment ago', async () => {
    expect((await snapshots.current()).find('flavor', 'f1')?.spec).toMatchObject({ ram_mb: 1024 });
    table.put('flavor', 'f1', { name: 'small', ram_mb: 2048 });
    expect((await snapshots.current()).find('flavor', 'f1')?.spec).toMatchObject({ ram_mb: 2048 });
  });

  it('sees a resource registered or deleted a moment ago', async () => {
    expect((await snapshots.current()).find('zone', 'z2')).toBeNull();
    table.put('zone', 'z2', { name: 'zone-2', cluster_ids: [] });
    expect((await snapshots.current()).find('zone', 'z2')).not.toBeNull();
    table.put('zone', 'z2', { name: 'zone-2', cluster_ids: [] }, true);
    expect((await snapshots.current()).find('zone', 'z2')).toBeNull();
  });

  it("lists a zone's clusters in name order, as the SQL list did", async () => {
    expect((await snapshots.current()).list('cluster', ['c1', 'c2']).map((c) => c.id)).toEqual(['c2', 'c1']);
  });

  it('shares one load among concurrent callers', async () => {
    const [a, b, c] = await Promise.all([snapshots.current(), snapshots.current(), snapshots.current()]);
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(table.loads).toBe(1);
  });

  it("asks for a cluster's capabilities once per catalog version", async () => {
    let catalog = await snapshots.current();
    await catalog.clusterCapabilities('p1', 'c1');
    await catalog.clusterCapabilities('p1', 'c1');
    expect(capabilityAsks).toBe(1);
    table.put('cluster', 'c1', { name: 'b-cluster', provider_id: 'p1', capabilities: { reboot: false } });
    catalog = await snapshots.current();
    await catalog.clusterCapabilities('p1', 'c1');
    expect(capabilityAsks).toBe(2);
  });

  it('never keeps a failed capabilities lookup', async () => {
    const catalog = await snapshots.current();
    failCapabilities = true;
    await expect(catalog.clusterCapabilities('p1', 'c1')).rejects.toThrow('provider stream unreadable');
    failCapabilities = false;
    await expect(catalog.clusterCapabilities('p1', 'c1')).resolves.toEqual({ reboot: true });
  });
});
