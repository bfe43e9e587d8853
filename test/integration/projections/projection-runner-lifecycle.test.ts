import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { createHcpUpcasters, VmCreateRequestedData } from '@hcp/domain';
import {
  DecodedEvent,
  DomainEventCodec,
  EventHandler,
  EventStore,
  PostgresEventStore,
  SubscribeOptions,
  Subscription,
} from '@hcp/eventstore';
import { Projection, ProjectionLocks, ProjectionRunner } from '@hcp/projections';
import { createDataSource } from '../../../src/platform/persistence/data-source';
import { vmCreateRequest } from '../../fakes/vm-histories';
import { eventually } from '../../support/api-client';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/** The real store, with a count of the subscriptions asked of it: a stopped runner must ask for none. */
class CountingStore {
  subscriptions = 0;
  constructor(private readonly inner: EventStore) {}
  asStore(): EventStore {
    return new Proxy(this.inner, {
      get: (target, prop, receiver) =>
        prop === 'subscribeToAll'
          ? (handler: EventHandler, options?: SubscribeOptions): Subscription => {
              this.subscriptions++;
              return target.subscribeToAll(handler, options);
            }
          : Reflect.get(target, prop, receiver),
    });
  }
}

/** The process's locks, with a count of the tries to take one. */
class CountingLocks extends ProjectionLocks {
  tries = 0;
  override tryAcquire(key: string, onLost: (err: Error) => void) {
    this.tries++;
    return super.tryAcquire(key, onLost);
  }
}

/** Records the vm ids of the VmCreateRequested events of its streams (a prefix of its own). */
class CreatedVms implements Projection {
  readonly name = `created${randomUUID().slice(0, 8)}`;
  readonly streamPrefixes: string[];
  readonly seen: string[] = [];

  constructor(
    readonly prefix: string,
    private readonly fault: () => Error | null = () => null,
  ) {
    this.streamPrefixes = [prefix];
  }

  async apply(events: DecodedEvent[], _tx: EntityManager): Promise<void> {
    const err = this.fault();
    if (err) throw err;
    for (const e of events) this.seen.push((e.event.data as VmCreateRequestedData).vm_id);
  }
}

describe('projection runner: stopping, restarts and poison events (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  const codec = new DomainEventCodec(createHcpUpcasters());
  const runners: ProjectionRunner[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_runner_life', 4);
    ds = database.ds;
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50, subscriptionRetryMs: 500 });
  });

  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined);
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  const session = async (): Promise<Client> => {
    const client = new Client({ connectionString: database.db.url });
    client.on('error', () => undefined);
    await client.connect();
    cleanups.push(() => client.end());
    return client;
  };
  const lockKey = (name: string) => `hcp-projection:${name}`;
  const prefix = () => `vm-${randomUUID().slice(0, 8)}`;
  const createData = (vmId: string): VmCreateRequestedData => vmCreateRequest({ vm_id: vmId, project_id: 'runner' });
  /** Appended raw, as a bad writer of the past (or a hand in the database) would: no codec to refuse it. */
  const appendRaw = (streamId: string, data: Record<string, unknown>, type = 'VmCreateRequested') =>
    store.append(
      streamId,
      [{ id: randomUUID(), type, data, metadata: { schema_version: 1, actor: 't', trace_id: 't' } }],
      'any',
    );
  const appendCreate = async (streamPrefix: string): Promise<string> => {
    const vmId = `${streamPrefix.slice(3)}-${randomUUID()}`;
    await appendRaw(`vm-${vmId}`, createData(vmId) as unknown as Record<string, unknown>);
    return vmId;
  };

  it('stops promptly while another session holds its lock, and never subscribes', async () => {
    const projection = new CreatedVms(prefix());
    const holder = await session();
    await holder.query(`SELECT pg_advisory_lock(hashtext($1))`, [lockKey(projection.name)]);
    const counting = new CountingStore(store);
    const locks = new CountingLocks(ds);
    cleanups.push(() => locks.close());
    const runner = new ProjectionRunner(ds, counting.asStore(), codec, projection, {
      batchSize: 10,
      retryMs: 5,
      locks,
    });
    runner.start();
    // Standing by: it tries the lock, waits, tries again...
    await eventually(async () => (locks.tries >= 3 ? true : undefined), 'the runner to try the lock a few times');

    await runner.stop();
    expect(runner.status().active).toBe(false);
    await holder.query(`SELECT pg_advisory_unlock_all()`);
    expect(counting.subscriptions).toBe(0);
  });

  it('stops while it waits for a connection, and never subscribes when the connection comes', async () => {
    const projection = new CreatedVms(prefix());
    const narrow = createDataSource(database.db.url, { poolSize: 2 });
    await narrow.initialize();
    cleanups.push(() => narrow.destroy());
    // Both connections of the pool taken: the runner waits for one.
    const occupiers = [narrow.createQueryRunner(), narrow.createQueryRunner()];
    for (const occupier of occupiers) await occupier.connect();
    const counting = new CountingStore(store);
    const runner = new ProjectionRunner(narrow, counting.asStore(), codec, projection, {
      batchSize: 10,
      retryMs: 10,
    });
    runner.start();

    // The connection comes free just after stop(): before the fix, the runner took its lock then and
    // subscribed, and stop() never resolved.
    const stopped = runner.stop();
    for (const occupier of occupiers) await occupier.release();
    await stopped;
    // The connection the runner was waiting for reaches it now and goes straight back to the pool.
    const driver = narrow.driver as unknown as { master: { idleCount: number; totalCount: number } };
    await eventually(
      async () => (driver.master.totalCount === 2 && driver.master.idleCount === 2 ? true : undefined),
      'the late connection to be given back',
    );
    expect(counting.subscriptions).toBe(0);
  });

  it('runs more projections than its pool has connections when they share the process’s locks', async () => {
    const narrow = createDataSource(database.db.url, { poolSize: 3 });
    await narrow.initialize();
    const locks = new ProjectionLocks(narrow);
    cleanups.push(
      () => narrow.destroy(),
      () => locks.close(),
    );
    const projections = Array.from({ length: 5 }, () => new CreatedVms(prefix()));
    for (const projection of projections) {
      const runner = new ProjectionRunner(narrow, store, codec, projection, { batchSize: 10, retryMs: 10, locks });
      runners.push(runner);
      runner.start();
    }
    const created = await Promise.all(projections.map((p) => appendCreate(p.prefix)));
    await eventually(
      async () => (projections.every((p, i) => p.seen.includes(created[i])) ? true : undefined),
      'every projection to apply its create',
      10_000,
    );
  });

  it('stops while it waits for its checkpoint, and never subscribes afterwards', async () => {
    const projection = new CreatedVms(prefix());
    const blocker = await session();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE projection_checkpoints IN ACCESS EXCLUSIVE MODE');
    const counting = new CountingStore(store);
    const runner = new ProjectionRunner(ds, counting.asStore(), codec, projection, { batchSize: 10, retryMs: 10 });
    runner.start();
    await eventually(async () => (runner.status().active ? true : undefined), 'the runner to take its lock');

    await runner.stop();
    // It let go of its lock on the way out, while its checkpoint read was still blocked.
    const other = await session();
    expect(
      (await other.query(`SELECT pg_try_advisory_lock(hashtext($1)) AS ok`, [lockKey(projection.name)])).rows,
    ).toEqual([{ ok: true }]);
    await blocker.query('COMMIT');
    await eventually(
      async () =>
        (
          await ds.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
          )
        ).length === 0
          ? true
          : undefined,
      'the blocked checkpoint read to end',
    );
    expect(counting.subscriptions).toBe(0);
  });

  it('restarts after transient failures, counting each, until the event applies', async () => {
    let faults = 4;
    const projection = new CreatedVms(prefix(), () =>
      faults-- > 0 ? Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }) : null,
    );
    const failures: unknown[] = [];
    const runner = new ProjectionRunner(ds, store, codec, projection, {
      batchSize: 10,
      retryMs: 5,
      maxRetryMs: 40,
      onFailure: (err) => failures.push(err),
    });
    runners.push(runner);
    runner.start();
    const vm = await appendCreate(projection.prefix);

    // Seen inside the transaction: the checkpoint moving past the event is what says it applied.
    const [appended] = await store.readStream(`vm-${vm}`);
    const applied = appended.position;
    await eventually(
      async () =>
        (
          await ds.query(`SELECT 1 FROM projection_checkpoints WHERE name = $1 AND position >= $2`, [
            projection.name,
            applied.toString(),
          ])
        ).length === 1
          ? true
          : undefined,
      'the create to apply',
    );
    expect(projection.seen).toEqual([vm]);
    expect(failures).toHaveLength(4);
    expect(runner.status().consecutiveFailures).toBe(0);
    expect(await ds.query(`SELECT 1 FROM projection_dead_letters WHERE projection = $1`, [projection.name])).toEqual(
      [],
    );
  });

  it('carries on after its database sessions are terminated', async () => {
    const projection = new CreatedVms(prefix());
    const runner = new ProjectionRunner(ds, store, codec, projection, {
      batchSize: 10,
      retryMs: 10,
      maxRetryMs: 200,
    });
    runners.push(runner);
    runner.start();
    const first = await appendCreate(projection.prefix);
    await eventually(async () => (projection.seen.includes(first) ? true : undefined), 'the first create');

    const dba = await session();
    await dba.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    const second = await eventually(() => appendCreate(projection.prefix).catch(() => undefined), 'an append');
    await eventually(async () => (projection.seen.includes(second) ? true : undefined), 'the create after the outage');
    expect(projection.seen.filter((id) => id === first)).toHaveLength(1);
  });

  it('restarts when the session holding its lock is terminated, and applies what comes next', async () => {
    const projection = new CreatedVms(prefix());
    const failures: unknown[] = [];
    const runner = new ProjectionRunner(ds, store, codec, projection, {
      batchSize: 10,
      retryMs: 10,
      maxRetryMs: 100,
      onFailure: (err) => failures.push(err),
    });
    runners.push(runner);
    runner.start();
    const first = await appendCreate(projection.prefix);
    await eventually(async () => (projection.seen.includes(first) ? true : undefined), 'the first create');

    const dba = await session();
    const terminated = await dba.query(
      `SELECT pg_terminate_backend(l.pid) AS done FROM pg_locks l
       WHERE l.locktype = 'advisory' AND l.granted AND l.objid = (hashtext($1)::bigint & 4294967295)::oid`,
      [lockKey(projection.name)],
    );
    expect(terminated.rows).toEqual([{ done: true }]);
    await eventually(async () => (failures.length > 0 ? true : undefined), 'the run to end');
    expect(String(failures[0])).toContain('the session holding the advisory lock ended');

    const second = await appendCreate(projection.prefix);
    await eventually(async () => (projection.seen.includes(second) ? true : undefined), 'the create after it');
    expect(projection.seen.filter((id) => id === first)).toHaveLength(1);
  });

  it('dead-letters an event whose data fails its schema at once, and applies the next ones', async () => {
    const projection = new CreatedVms(prefix());
    const good = `${projection.prefix.slice(3)}-${randomUUID()}`;
    const bad = createData('ignored') as unknown as Record<string, unknown>;
    delete bad.job_id;
    bad.vm_id = 42;
    const poisonStream = `vm-${projection.prefix.slice(3)}-${randomUUID()}`;
    await appendRaw(poisonStream, bad);
    await appendRaw(`vm-${good}`, createData(good) as unknown as Record<string, unknown>);
    const runner = new ProjectionRunner(ds, store, codec, projection, { batchSize: 10, retryMs: 10 });
    runners.push(runner);
    runner.start();

    await eventually(async () => (projection.seen.includes(good) ? true : undefined), 'the good create');
    const letters = await ds.query(
      `SELECT stream_id, event_type, attempts, error FROM projection_dead_letters WHERE projection = $1`,
      [projection.name],
    );
    expect(letters).toEqual([
      {
        stream_id: poisonStream,
        event_type: 'VmCreateRequested',
        attempts: 1,
        error: 'EventSchemaViolation: VmCreateRequested event data fails its schema at vm_id: expected string',
      },
    ]);
  });

  it('skips events of a type it does not know, counting each and logging the type once', async () => {
    const projection = new CreatedVms(prefix());
    const unknown: string[] = [];
    for (let i = 0; i < 3; i++) await appendRaw(`${projection.prefix}-${randomUUID()}`, { x: i }, 'VmTeleported');
    const after = await appendCreate(projection.prefix);
    const runner = new ProjectionRunner(ds, store, codec, projection, {
      batchSize: 10,
      retryMs: 10,
      onUnknownEvent: (type) => unknown.push(type),
    });
    runners.push(runner);
    runner.start();

    await eventually(async () => (projection.seen.includes(after) ? true : undefined), 'the create after them');
    expect(unknown).toEqual(['VmTeleported', 'VmTeleported', 'VmTeleported']);
    expect(projection.seen).toEqual([after]);
  });
});
