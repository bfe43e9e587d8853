import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { createHcpUpcasters, evolveVm, VmCreateRequestedData, VmEvent, VmState, VmStatus } from '@hcp/domain';
import { DecodedEvent, DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { OneStatementBatch, Projection, ProjectionRunner } from '@hcp/projections';
import { vmReadModelProjection } from '@hcp/projections/vm-read-model/vm-read-model.projection';
import { vmCreateRequest, vmHistory } from '../../fakes/vm-histories';
import { eventually } from '../../support/api-client';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/** The VM read model under a name of its own, telling when each batch's statement is built and how it ended. */
class LoggedVmReadModel implements Projection {
  readonly name = `vm-ahead-${randomUUID().slice(0, 8)}`;
  readonly log: string[] = [];
  private readonly inner = vmReadModelProjection();
  readonly streamPrefixes = this.inner.streamPrefixes;
  readonly statementsAhead = this.inner.statementsAhead;
  private built = 0;

  apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    this.log.push('applied');
    return this.inner.apply(events, tx);
  }

  oneStatement(events: DecodedEvent[]): OneStatementBatch | null {
    const statement = this.inner.oneStatement(events);
    if (!statement) return null;
    const n = ++this.built;
    this.log.push(`built ${n}`);
    return {
      ...statement,
      committed: () => {
        this.log.push(`written ${n}`);
        statement.committed();
      },
      refused: () => {
        this.log.push(`not written ${n}`);
        statement.refused();
      },
    };
  }
}

const STATUSES: VmStatus[] = ['provisioning', 'running', 'stopped', 'starting', 'stopping', 'deleting', 'deleted'];

/** A VM's history to `status` with job ids the read model can store (its job column is a uuid). */
const historyTo = (data: VmCreateRequestedData, status: VmStatus): VmEvent[] => {
  const jobs = new Map<string, string>();
  return JSON.parse(
    JSON.stringify(vmHistory(data, status)).replace(/"given-\w+"/g, (job) => {
      if (!jobs.has(job)) jobs.set(job, `"${randomUUID()}"`);
      return jobs.get(job)!;
    }),
  );
};
const AT = '2026-12-01T00:00:00.000Z';

/**
 * Full batches are worked out (decoded, folded, their statement built) while the batch before them is
 * written. The rows must still be what the domain folds, including when a batch does not go as its
 * statement assumed and the batch after it was built on that assumption.
 */
describe('projection runner: the next batch worked out while one is written (real PostgreSQL)', () => {
  const codec = new DomainEventCodec(createHcpUpcasters());
  let database: MigratedDatabase;
  let pool: Pool;
  let store: PostgresEventStore;
  let runner: ProjectionRunner | undefined;

  beforeEach(async () => {
    database = await migratedTestDatabase('hcp_runner_ahead', 4);
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
  });

  afterEach(async () => {
    await runner?.stop();
    runner = undefined;
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  /** Appends the events in this order, each given as its VM, the VM's history and its index there. */
  const appendInOrder = async (order: Array<[id: string, events: VmEvent[], index: number]>): Promise<bigint> => {
    let last = -1n;
    for (const [id, events, i] of order) {
      const event = events[i]!;
      const result = await store.append(
        `vm-${id}`,
        [
          {
            id: randomUUID(),
            type: event.type,
            data: event.data as unknown as Record<string, unknown>,
            metadata: { schema_version: 1, actor: 't', trace_id: 't', occurred_at: AT },
          },
        ],
        i === 0 ? 'no_stream' : BigInt(i - 1),
      );
      last = result.position;
    }
    return last;
  };

  /** Appends each VM's history, the VMs' events interleaved so that a VM's history spans batches. */
  const appendInterleaved = (histories: Array<{ id: string; events: VmEvent[] }>): Promise<bigint> =>
    appendInOrder(
      Array.from({ length: Math.max(...histories.map((h) => h.events.length)) }, (_, i) =>
        histories.filter((h) => i < h.events.length).map((h): [string, VmEvent[], number] => [h.id, h.events, i]),
      ).flat(),
    );

  const started = (projection: Projection, batchSize: number, ds: DataSource = database.ds) => {
    runner = new ProjectionRunner(ds, store, codec, projection, { batchSize, retryMs: 10, maxTransientRetryMs: 20 });
    runner.start();
    return runner;
  };
  const appliedUpTo = (last: bigint) =>
    eventually(async () => (runner!.status().position >= last ? true : undefined), 'the last event applied');
  const run = async (projection: LoggedVmReadModel, last: bigint, batchSize: number) => {
    started(projection, batchSize);
    await appliedUpTo(last);
  };

  const stateOf = async (id: string): Promise<VmState> =>
    (await database.ds.query(`SELECT state FROM vm_read_model WHERE id = $1`, [id]))[0]?.state;

  const foldOf = (events: VmEvent[], from: VmState | null = null): VmState | null =>
    events.reduce<VmState | null>((state, event) => evolveVm(state, event, AT), from);

  it('builds the next full batch before the batch before it is written, and the rows are the domain’s fold', async () => {
    const histories = Array.from({ length: 24 }, (_, i) => {
      const data = vmCreateRequest({ name: `vm-${i}` });
      return { id: data.vm_id, events: historyTo(data, STATUSES[i % STATUSES.length]!) };
    });
    const last = await appendInterleaved(histories);
    const projection = new LoggedVmReadModel();

    await run(projection, last, 5);

    for (const { id, events } of histories) expect(await stateOf(id)).toEqual(foldOf(events));
    const builtBeforeTheOneBeforeWasWritten = projection.log.filter((entry, i) => {
      const n = /^built (\d+)$/.exec(entry)?.[1];
      return n !== undefined && !projection.log.slice(0, i).includes(`written ${Number(n) - 1}`) && n !== '1';
    });
    expect(builtBeforeTheOneBeforeWasWritten.length).toBeGreaterThan(0);
    expect(projection.log.filter((e) => e.startsWith('not written'))).toEqual([]);
  });

  it('drops a batch built on one that was not written as assumed, and folds from the row the table holds', async () => {
    const warm = vmCreateRequest();
    const warmEvents = historyTo(warm, 'stopping'); // create, created, stop requested
    const renamed = vmCreateRequest();
    const renamedEvents = historyTo(renamed, 'stopping');
    const [warmId, renamedId] = [warm.vm_id, renamed.vm_id];
    // Batches of two. 1: the warm-up VM's first two events (through a transaction, which readies the
    // statements). 2: the renamed VM's create and its outcome, built as if it had no row yet. 3: both
    // stops, built ahead on batch 2's rows.
    const last = await appendInOrder([
      [warmId, warmEvents, 0],
      [warmId, warmEvents, 1],
      [renamedId, renamedEvents, 0],
      [renamedId, renamedEvents, 1],
      [renamedId, renamedEvents, 2],
      [warmId, warmEvents, 2],
    ]);
    // Another writer (a rebuild elsewhere) holds the VM's row at its first event, under another name.
    const [createdAt] = await store.readStream(`vm-${renamedId}`);
    const renamedCreate = renamedEvents[0] as Extract<VmEvent, { type: 'VmCreateRequested' }>;
    const elsewhere = { ...renamedCreate, data: { ...renamedCreate.data, name: 'renamed-elsewhere' } };
    await database.ds.transaction((tx) =>
      vmReadModelProjection().apply(
        [
          {
            event: elsewhere,
            eventId: createdAt!.id,
            streamId: createdAt!.streamId,
            revision: createdAt!.revision,
            position: createdAt!.position,
            at: AT,
            context: {},
          },
        ],
        tx,
      ),
    );
    const projection = new LoggedVmReadModel();

    await run(projection, last, 2);

    const expected = foldOf(renamedEvents.slice(1), foldOf([elsewhere]));
    expect((await stateOf(renamed.vm_id)).name).toBe('renamed-elsewhere');
    expect(await stateOf(renamed.vm_id)).toEqual(expected);
    expect(await stateOf(warm.vm_id)).toEqual(foldOf(warmEvents));
    // Batch 3 built while batch 2 was written; batch 2's statement refused (the row is there) and the
    // batch applied from the table; batch 3's statement, built on what batch 2 assumed, dropped unsent and
    // the batch applied from the table too.
    expect(projection.log).toEqual([
      'applied',
      'built 1',
      'built 2',
      'not written 1',
      'applied',
      'not written 2',
      'applied',
    ]);
  });

  /**
   * The data source, its `query` (the one-statement batches) and `transaction` (the others) failing as
   * `faults` says, call after call, and answering every call after those: `before` the database sees the
   * call, or `after` it has committed (the answer lost with the connection). The runner restarts from its
   * checkpoint after each.
   */
  const failing = (ds: DataSource, faults: Array<'ok' | 'before' | 'after'>) => {
    let call = 0;
    const lost = () => Object.assign(new Error('connection lost (injected)'), { code: 'ECONNRESET' });
    const wrap =
      <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
      async (...args: A) => {
        const fault = faults[call++];
        if (fault === 'before') throw lost();
        const answer = await fn(...args);
        if (fault === 'after') throw lost();
        return answer;
      };
    return new Proxy(ds, {
      get: (target, prop, receiver) =>
        prop === 'query' || prop === 'transaction'
          ? wrap((target[prop] as (...args: unknown[]) => Promise<unknown>).bind(target))
          : Reflect.get(target, prop, receiver),
    });
  };

  it('holds the domain’s fold of every VM whatever the batches and however the writes fail (chaos)', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...STATUSES), { minLength: 3, maxLength: 10 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.constantFrom<'ok' | 'before' | 'after'>('ok', 'before', 'after'), {
          minLength: 1,
          maxLength: 40,
        }),
        async (statuses, batchSize, faults) => {
          runs++;
          await database.ds.query(
            `TRUNCATE hcp_events, vm_read_model, projection_checkpoints, projection_dead_letters`,
          );
          const histories = statuses.map((status) => {
            const data = vmCreateRequest();
            return { id: data.vm_id, events: historyTo(data, status) };
          });
          try {
            // Started first: the events reach it live, a few at a time, between full batches.
            started(new LoggedVmReadModel(), batchSize, failing(database.ds, faults));
            await appliedUpTo(await appendInterleaved(histories));
          } finally {
            await runner?.stop();
            runner = undefined;
          }

          for (const { id, events } of histories) expect(await stateOf(id)).toEqual(foldOf(events));
          const dead = await database.ds.query(`SELECT count(*)::int AS n FROM projection_dead_letters`);
          expect(dead[0].n).toBe(0);
        },
      ),
      { numRuns: 20 },
    );
    expect(runs).toBe(20);
  }, 120_000);

  it('hands every event over once and in order while full batches are cut ahead of a busy writer', async () => {
    /** Writes slowly, so that events arrive while batches wait their turn, some cut full, some not. */
    class SlowRecorder implements Projection {
      readonly name = `slow-${randomUUID().slice(0, 8)}`;
      readonly streamPrefixes = ['vm-'];
      readonly statementsAhead = true;
      readonly positions: bigint[] = [];

      async apply(events: DecodedEvent[]): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 5));
        this.positions.push(...events.map((e) => e.position));
      }
    }
    const projection = new SlowRecorder();
    started(projection, 3);
    const appended: bigint[] = [];
    for (let group = 0; group < 25; group++) {
      const histories = Array.from({ length: 1 + (group % 4) }, () => {
        const data = vmCreateRequest();
        return { id: data.vm_id, events: historyTo(data, 'provisioning') };
      });
      for (const { id, events } of histories) appended.push(await appendInOrder([[id, events, 0]]));
      await new Promise((resolve) => setTimeout(resolve, group % 3));
    }
    await appliedUpTo(appended[appended.length - 1]!);

    expect(projection.positions).toEqual(appended);
  });
});
