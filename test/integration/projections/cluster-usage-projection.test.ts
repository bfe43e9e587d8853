import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { ClusterUsageProjection } from '@hcp/projections/cluster-usage/cluster-usage.projection';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/** Cluster allocations for placement, kept per batch on real PostgreSQL. */
describe('cluster usage projection', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let position = 0n;
  const projection = new ClusterUsageProjection();

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_usage');
    ds = database.ds;
  });

  afterAll(async () => {
    await database?.close();
  });

  const ev = (vmId: string, event: { type: string; data: object }): DecodedEvent => ({
    event: { version: 1, ...event } as unknown as VmEvent,
    eventId: randomUUID(),
    streamId: `vm-${vmId}`,
    revision: 0n,
    position: ++position,
    at: new Date().toISOString(),
    context: {},
  });
  const created = (vmId: string, cluster: string, vcpus: number) =>
    ev(vmId, {
      type: 'VmCreateRequested',
      data: {
        placement: { cluster_id: cluster, provider_id: 'p', image_ref: 't' },
        resources: { vcpus, ram_mb: vcpus * 1024, disk_gb: 10 },
      },
    });
  const deleted = (vmId: string) => ev(vmId, { type: 'VmDeleted', data: { job_id: randomUUID() } });
  const createFailed = (vmId: string) =>
    ev(vmId, {
      type: 'VmOperationFailed',
      data: {
        job_id: randomUUID(),
        operation: 'create',
        error: { code: 'PROVIDER_UNAVAILABLE', message: 'x', retryable: false },
        status_after: 'error',
      },
    });
  const apply = (events: DecodedEvent[]) => ds.transaction((tx) => projection.apply(events, tx));
  const usage = async (cluster: string) =>
    (
      await ds.query(
        `SELECT instances, vcpus, ram_mb::int AS ram_mb, disk_gb::int AS disk_gb FROM cluster_usage WHERE cluster_id = $1`,
        [cluster],
      )
    )[0];

  it('adds up a batch of allocations per cluster, and a VM created and deleted in one batch counts nothing', async () => {
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await apply([created(a, 'c1', 2), created(b, 'c1', 4), created(c, 'c2', 1), created(d, 'c1', 8), deleted(d)]);
    expect(await usage('c1')).toEqual({ instances: 2, vcpus: 6, ram_mb: 6144, disk_gb: 20 });
    expect(await usage('c2')).toEqual({ instances: 1, vcpus: 1, ram_mb: 1024, disk_gb: 10 });
  });

  it('releases deleted VMs and failed creates, and ignores a repeated allocation or an unknown release', async () => {
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await apply([created(a, 'c3', 2), created(b, 'c3', 2), created(c, 'c3', 2)]);
    await apply([created(a, 'c3', 2), deleted(b), createFailed(c), deleted(randomUUID())]);
    expect(await usage('c3')).toEqual({ instances: 1, vcpus: 2, ram_mb: 2048, disk_gb: 10 });
    await apply([deleted(b)]);
    expect(await usage('c3')).toEqual({ instances: 1, vcpus: 2, ram_mb: 2048, disk_gb: 10 });
  });
});
