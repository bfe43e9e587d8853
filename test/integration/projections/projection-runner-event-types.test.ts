import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { createHcpUpcasters } from '@hcp/domain';
import { DecodedEvent, DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { Projection, ProjectionRunner } from '@hcp/projections';
import { vmCreateRequest } from '../../fakes/vm-histories';
import { eventually } from '../../support/api-client';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/** Acts on VmCreateRequested only, and says so: the runner hands it nothing else. */
class CreatesOnly implements Projection {
  readonly name = `creates${randomUUID().slice(0, 8)}`;
  readonly streamPrefixes: string[];
  readonly eventTypes: ReadonlySet<string> = new Set(['VmCreateRequested']);
  readonly handed: string[] = [];

  constructor(prefix: string) {
    this.streamPrefixes = [prefix];
  }

  async apply(events: DecodedEvent[], _tx: EntityManager): Promise<void> {
    for (const e of events) this.handed.push(e.event.type);
  }
}

describe('projection runner: a projection that declares its event types (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  const codec = new DomainEventCodec(createHcpUpcasters());
  const runners: ProjectionRunner[] = [];

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_runner_types', 4);
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
  });

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.stop()));
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  /** The data source, counting the query runners taken from it: one per transaction, one for the lock. */
  const counted = (ds: DataSource) => {
    const counter = { queryRunners: 0 };
    const proxy = new Proxy(ds, {
      get: (target, prop, receiver) =>
        prop === 'createQueryRunner'
          ? () => {
              counter.queryRunners++;
              return target.createQueryRunner();
            }
          : Reflect.get(target, prop, receiver),
    });
    return { ds: proxy, counter };
  };
  const checkpoint = async (name: string): Promise<bigint> => {
    const rows = await database.ds.query(`SELECT position::text AS p FROM projection_checkpoints WHERE name = $1`, [
      name,
    ]);
    return rows.length ? BigInt(rows[0].p) : -1n;
  };
  const append = async (streamId: string, type: string, data: object) =>
    (
      await store.append(
        streamId,
        [
          {
            id: randomUUID(),
            type,
            data: data as Record<string, unknown>,
            metadata: { schema_version: 1, actor: 't', trace_id: 't' },
          },
        ],
        'any',
      )
    ).position;

  /**
   * A running CreatesOnly projection that has applied one create: its stream prefix, the create's VM id,
   * and the query runners taken from the data source since (one per transaction).
   */
  const runningAfterACreate = async (idleCheckpointMs: number) => {
    const prefix = `vm-${randomUUID().slice(0, 8)}`;
    const projection = new CreatesOnly(prefix);
    const { ds, counter } = counted(database.ds);
    const runner = new ProjectionRunner(ds, store, codec, projection, { batchSize: 10, retryMs: 10, idleCheckpointMs });
    runners.push(runner);
    runner.start();
    const vmId = `${prefix.slice(3)}-${randomUUID()}`;
    const created = await append(`vm-${vmId}`, 'VmCreateRequested', vmCreateRequest({ vm_id: vmId }));
    await eventually(async () => ((await checkpoint(projection.name)) >= created ? true : undefined), 'the create');
    const before = counter.queryRunners;
    return { prefix, projection, runner, vmId, transactionsSince: () => counter.queryRunners - before };
  };

  it('hands over only those types, opens no transaction for the others, and still checkpoints past them', async () => {
    // Long enough that the five ignored commits below all fall inside one wait.
    const { projection, runner, vmId, transactionsSince } = await runningAfterACreate(3_000);
    let last = runner.status().position;
    for (let i = 0; i < 5; i++) {
      last = await append(`vm-${vmId}`, 'VmStartRequested', { job_id: randomUUID() });
    }
    await eventually(
      async () => ((await checkpoint(projection.name)) >= last ? true : undefined),
      'the checkpoint to move past the ignored events',
    );

    expect(projection.handed).toEqual(['VmCreateRequested']);
    // Five commits of ignored events: one transaction, the idle move of the checkpoint.
    expect(transactionsSince()).toBe(1);
    expect(runner.status().position).toBe(last);
  });

  it('carries the checkpoint past ignored events with the next batch it acts on', async () => {
    const { prefix, projection, vmId, transactionsSince } = await runningAfterACreate(60_000);

    await append(`vm-${vmId}`, 'VmStartRequested', { job_id: randomUUID() });
    const second = `${prefix.slice(3)}-${randomUUID()}`;
    const next = await append(`vm-${second}`, 'VmCreateRequested', vmCreateRequest({ vm_id: second }));
    await eventually(async () => ((await checkpoint(projection.name)) >= next ? true : undefined), 'the next create');

    expect(projection.handed).toEqual(['VmCreateRequested', 'VmCreateRequested']);
    expect(transactionsSince()).toBe(1);
  });
});
