import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { createHcpUpcasters, decideVm, jobStreamId, VmCreateRequestedData, vmStreamId } from '@hcp/domain';
import { DecodedEvent, DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { Projection, ProjectionRunner } from '@hcp/projections';
import { JobRepository } from '../../../src/jobs/job.repository';
import { JobQueue } from '../../../src/jobs/queue/job-queue';
import { VmJobDispatcherProjection } from '../../../src/vms/jobs/vm-job-dispatcher.projection';
import { vmCreateRequest } from '../../fakes/vm-histories';
import { eventually } from '../../support/api-client';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/**
 * The job dispatcher appends JobQueued to the event store outside its projection's transaction. Its
 * event id is the job id the request carries, so a batch that fails after that append and is applied
 * again lands on the same event: one JobQueued, one queue row.
 */
describe('job dispatcher: a batch failing after its append (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let dispatcher: VmJobDispatcherProjection;
  const codec = new DomainEventCodec(createHcpUpcasters());
  const runners: ProjectionRunner[] = [];

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_dispatch_retry', 3);
    ds = database.ds;
    pool = new Pool({ connectionString: database.db.url, max: 3 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    dispatcher = new VmJobDispatcherProjection(new JobRepository(store, codec), new JobQueue(ds));
  });

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.stop()));
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  /** The dispatcher, then a failure later in the same batch (as another event's write would fail). */
  class FailingAfterDispatch implements Projection {
    readonly name = 'job-dispatcher';
    readonly streamPrefixes = dispatcher.streamPrefixes;
    failuresLeft: number;
    constructor(
      failures: number,
      private readonly failure: () => Error,
    ) {
      this.failuresLeft = failures;
    }
    async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
      await dispatcher.apply(events, tx);
      if (this.failuresLeft-- > 0) throw this.failure();
    }
  }

  const requestCreate = async (): Promise<VmCreateRequestedData> => {
    const vmId = randomUUID();
    const data = vmCreateRequest({ vm_id: vmId, project_id: 'retry' });
    // The handler "died" after this append: no JobQueued, no queue row.
    const events = decideVm(null, { type: 'create', data });
    await store.append(
      vmStreamId(vmId),
      events.map((e) => codec.encode(e, { actor: 'alice', trace_id: 't', occurred_at: new Date().toISOString() })),
      'no_stream',
    );
    return data;
  };
  const queueRows = async (jobId: string) =>
    (await ds.query(`SELECT count(*)::int AS n FROM job_queue WHERE job_id = $1`, [jobId]))[0].n;

  it.each([
    [
      'transient (restart from the checkpoint)',
      () => Object.assign(new Error('Connection terminated'), { code: '08006' }),
    ],
    ['not transient (the batch is re-applied event by event)', () => new Error('a bug further down the batch')],
  ])('yields exactly one JobQueued and one queue row when the failure is %s', async (_kind, failure) => {
    const request = await requestCreate();
    const projection = new FailingAfterDispatch(2, failure);
    const runner = new ProjectionRunner(ds, store, codec, projection, { batchSize: 50, retryMs: 5, maxRetryMs: 20 });
    runners.push(runner);
    runner.start();

    await eventually(async () => ((await queueRows(request.job_id)) === 1 ? true : undefined), 'the queue row');
    await runner.stop();
    const stream = await store.readStream(jobStreamId(request.job_id));
    expect(stream.map((e) => e.type)).toEqual(['JobQueued']);
    expect(stream[0].id).toBe(request.job_id);
    expect(projection.failuresLeft).toBeLessThan(0);
    expect(await queueRows(request.job_id)).toBe(1);
  });
});
