import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { register } from 'prom-client';
import { DataSource } from 'typeorm';
import {
  createHcpUpcasters,
  decideJob,
  HcpError,
  JobEvent,
  JobQueued,
  JobState,
  jobEvent,
  jobStreamId,
} from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { jobReadModelProjection } from '../../../projections/job-read-model/job-read-model.projection';
import { JobRepository } from '../../../src/jobs/job.repository';
import { JobAdmission } from '../../../src/jobs/queue/job-admission';
import { JobQueue } from '../../../src/jobs/queue/job-queue';
import { JobRecovery } from '../../../src/jobs/recovery/job-recovery';
import { JobDeadlineSweep } from '../../../src/jobs/worker/job-deadline-sweep';
import { JOB_WORKER_ACTOR } from '../../../src/jobs/worker/job-executor';
import { JobExecutors } from '../../../src/jobs/worker/job-executors';
import { JobRunner } from '../../../src/jobs/worker/job-runner';
import { JobWorker, JobWorkerOptions } from '../../../src/jobs/worker/job-worker';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { HcpMetrics } from '../../../src/platform/observability/hcp-metrics';
import { eventually } from '../../support/api-client';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';
import { ScriptedJobExecutor } from '../../fakes/scripted-job-executor';

const OPTIONS: JobWorkerOptions = {
  leaseMs: 30_000,
  concurrency: 8,
  pollMs: 50,
  maxAttempts: 3,
  retryBackoffMs: 1000,
  attemptTimeoutMs: 60_000,
};

/** Work that hangs until its attempt is aborted, then fails as an aborted driver call does. */
const hangsUntilAborted = () => (_job: JobState, attempt: { signal: AbortSignal }) =>
  new Promise<{ kind: 'failed'; target: string; error: unknown }>((resolve) => {
    const fail = () =>
      resolve({ kind: 'failed', target: 'simulator', error: new HcpError('PROVIDER_TIMEOUT', 'aborted') });
    if (attempt.signal.aborted) fail();
    else attempt.signal.addEventListener('abort', fail, { once: true });
  });

describe('jobs given back on stop, jobs past their deadline, jobs recovered by ops (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let codec: DomainEventCodec;
  let jobs: JobRepository;
  let queue: JobQueue;
  let executor: ScriptedJobExecutor;
  let runner: JobRunner;
  let recovery: JobRecovery;
  const metrics = new HcpMetrics();

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_job_release', 4);
    ds = database.ds;
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    pool.on('error', () => undefined);
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    codec = new DomainEventCodec(createHcpUpcasters());
    jobs = new JobRepository(store, codec);
    queue = new JobQueue(ds);
  });

  beforeEach(() => {
    register.resetMetrics();
    executor = new ScriptedJobExecutor();
    const executors = new JobExecutors();
    executors.register('vm', executor);
    runner = new JobRunner(jobs, executors, metrics);
    recovery = new JobRecovery(jobs, queue, executors, metrics, { jobs: { leaseMs: 30_000 } as never });
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  async function admitted(deadline: Date | null = null): Promise<string> {
    const id = randomUUID();
    const queued = jobEvent<JobQueued>('JobQueued', {
      job_id: id,
      project_id: 'rel',
      type: 'vm.stop',
      resource_id: randomUUID(),
      trace_id: `t-${id}`,
      actor: 'alice',
      params: {},
      ...(deadline ? { deadline: deadline.toISOString() } : {}),
    });
    await new JobAdmission(jobs, queue, ds).admit(queued, eventContext('alice', `t-${id}`));
    return id;
  }

  async function history(id: string): Promise<JobEvent[]> {
    return (await store.readStream(jobStreamId(id))).map((r) => codec.decode<JobEvent>(r).event);
  }

  async function rows(ids: string[]) {
    return ds.query(
      `SELECT job_id, status, lease_owner, lease_expires_at, available_at <= now() AS due FROM job_queue
       WHERE job_id = ANY($1::uuid[]) ORDER BY job_id`,
      [ids],
    ) as Promise<Array<{ status: string; lease_owner: string | null; lease_expires_at: Date | null; due: boolean }>>;
  }

  /** The job read model as the projection folds it (the sweep finds deadlines there). */
  async function projected(ids: string[]): Promise<void> {
    const decoded = (await Promise.all(ids.map((id) => store.readStream(jobStreamId(id)))))
      .flat()
      .map((r) => codec.decode(r));
    await ds.transaction((tx) => jobReadModelProjection().apply(decoded, tx));
  }

  async function appendAs(id: string, command: Parameters<typeof decideJob>[1]): Promise<void> {
    const loaded = await jobs.load(id);
    await jobs.append(loaded, decideJob(loaded.state, command), eventContext(JOB_WORKER_ACTOR, 't'));
  }

  describe('a worker that stops with jobs in flight', () => {
    it('gives them back: rows unleased and due, JobAttemptReleased with the same attempt, and a second worker finishes them', async () => {
      const ids = await Promise.all([admitted(), admitted(), admitted()]);
      executor.willAnswer(hangsUntilAborted(), hangsUntilAborted(), hangsUntilAborted());
      const first = new JobWorker(queue, runner, OPTIONS);
      first.start();
      await eventually(
        async () => (executor.callNames().filter((c) => c === 'perform').length === 3 ? true : undefined),
        'three jobs running on the first worker',
      );

      await first.stop(10_000, 0);

      expect(await rows(ids)).toEqual(
        ids.map(() =>
          expect.objectContaining({ status: 'queued', lease_owner: null, lease_expires_at: null, due: true }),
        ),
      );
      for (const id of ids) {
        expect(await history(id)).toEqual([
          expect.objectContaining({ type: 'JobQueued' }),
          jobEvent('JobStarted', { attempt: 1, worker: first.id }),
          jobEvent('JobAttemptReleased', { attempt: 1, worker: first.id, reason: 'worker_stopping' }),
        ]);
        expect((await jobs.load(id)).state).toMatchObject({ status: 'queued', attempts: 0, error: null });
      }
      expect((await metrics.jobsFinished.get()).values).toEqual([]);

      executor.willAnswer(executor.done(), executor.done(), executor.done());
      const second = new JobWorker(queue, runner, OPTIONS);
      second.start();
      await eventually(
        async () => ((await rows(ids)).every((r) => r.status === 'done') ? true : undefined),
        'the second worker finishing the given-back jobs',
      );
      await second.stop();
      for (const id of ids) {
        expect((await history(id)).slice(3)).toEqual([
          jobEvent('JobStarted', { attempt: 1, worker: second.id }),
          jobEvent('JobSucceeded', { attempt: 1 }),
        ]);
      }
    });

    it('lets a job that finishes within the grace finish instead of giving it back', async () => {
      const id = await admitted();
      let finish: () => void = () => undefined;
      executor.willAnswer(
        () =>
          new Promise((resolve) => {
            finish = () => resolve(executor.done());
          }),
      );
      const worker = new JobWorker(queue, runner, OPTIONS);
      worker.start();
      await eventually(async () => (executor.calls.length === 1 ? true : undefined), 'the job running');

      const stopped = worker.stop(10_000, 10_000);
      finish();
      await stopped;

      expect((await history(id)).map((e) => e.type)).toEqual(['JobQueued', 'JobStarted', 'JobSucceeded']);
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'done' })]);
    });
  });

  describe('the deadline sweep', () => {
    it('fails a waiting job past its deadline with PROVIDER_TIMEOUT and settles its resource', async () => {
      const deadline = new Date(Date.now() - 1000);
      const id = await admitted(deadline);
      await projected([id]);
      const sweep = new JobDeadlineSweep(queue, runner, { jobs: { leaseMs: 30_000 } as never });

      expect(await sweep.sweep()).toBe(1);

      const events = await history(id);
      expect(events.at(-1)).toEqual(
        jobEvent('JobFailed', {
          attempt: 0,
          error: {
            code: 'PROVIDER_TIMEOUT',
            message: `the job did not finish by its deadline (${deadline.toISOString()})`,
            details: { deadline: deadline.toISOString() },
            retryable: false,
          },
        }),
      );
      expect(executor.callNames()).toEqual(['recordFailure']);
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'done', lease_owner: null })]);
    });

    it('fails a job past its deadline that a dead worker held running', async () => {
      const id = await admitted(new Date(Date.now() - 1000));
      const [leased] = await queue.lease('worker-dead', 30_000, 100).then((l) => l.filter((j) => j.job_id === id));
      expect(leased).toBeDefined();
      await appendAs(id, { type: 'start', worker: 'worker-dead' });
      await ds.query(`UPDATE job_queue SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1`, [id]);
      await projected([id]);

      await new JobDeadlineSweep(queue, runner, { jobs: { leaseMs: 30_000 } as never }).sweep();

      expect((await history(id)).map((e) => e.type)).toEqual(['JobQueued', 'JobStarted', 'JobFailed']);
      expect((await jobs.load(id)).state).toMatchObject({ status: 'failed', error: { code: 'PROVIDER_TIMEOUT' } });
    });

    it('leaves alone a job a live worker holds and a job whose deadline is ahead', async () => {
      const held = await admitted(new Date(Date.now() - 1000));
      await ds.query(
        `UPDATE job_queue SET status = 'leased', lease_owner = 'worker-live', lease_expires_at = now() + interval '30 seconds'
         WHERE job_id = $1`,
        [held],
      );
      await appendAs(held, { type: 'start', worker: 'worker-live' });
      const ahead = await admitted(new Date(Date.now() + 60_000));
      await projected([held, ahead]);

      await new JobDeadlineSweep(queue, runner, { jobs: { leaseMs: 30_000 } as never }).sweep();

      expect((await history(held)).map((e) => e.type)).toEqual(['JobQueued', 'JobStarted']);
      expect((await history(ahead)).map((e) => e.type)).toEqual(['JobQueued']);
      expect(await rows([held])).toEqual([expect.objectContaining({ status: 'leased', lease_owner: 'worker-live' })]);
      expect(await rows([ahead])).toEqual([expect.objectContaining({ status: 'queued', lease_owner: null })]);
      expect(executor.calls).toEqual([]);
    });
  });

  describe('ops recovery', () => {
    const OPS = eventContext('ops:olga', 'trace-ops');
    const holdAs = async (id: string, owner: string, expires: string) => {
      await ds.query(
        `UPDATE job_queue SET status = 'leased', lease_owner = $2, lease_expires_at = now() + $3::interval WHERE job_id = $1`,
        [id, owner, expires],
      );
      await appendAs(id, { type: 'start', worker: owner });
    };

    it('refuses with CONFLICT while a live worker holds the job, and leaves the row to it', async () => {
      const id = await admitted();
      await holdAs(id, 'worker-live', '30 seconds');

      await expect(recovery.recover(id, 'mark-failed', 'stuck?', OPS)).rejects.toMatchObject({ code: 'CONFLICT' });

      expect((await history(id)).map((e) => e.type)).toEqual(['JobQueued', 'JobStarted']);
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'leased', lease_owner: 'worker-live' })]);
      expect(executor.calls).toEqual([]);
    });

    it('retries a running job whose holder died: released from it, due now, a fresh budget', async () => {
      const id = await admitted();
      await holdAs(id, 'worker-dead', '-1 second');

      const view = await recovery.recover(id, 'retry', 'worker host lost', OPS);

      expect(view).toMatchObject({ id, status: 'queued', attempts: 0 });
      expect((await history(id)).at(-1)).toMatchObject({
        type: 'JobRecovered',
        data: { action: 'retry', reason: 'worker host lost', previous_status: 'running' },
      });
      const [recovered] = await store.readStream(jobStreamId(id), { fromRevision: 2n });
      expect(codec.decode(recovered!).context).toMatchObject({ actor: 'ops:olga', trace_id: 'trace-ops' });
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'queued', lease_owner: null, due: true })]);
    });

    it('marks a waiting job failed: the resource records the failure, the row is done, the job counted once', async () => {
      const id = await admitted();

      const view = await recovery.recover(id, 'mark-failed', 'VM removed by hand', OPS);

      expect(view).toMatchObject({
        status: 'failed',
        error: { code: 'INTERNAL_ERROR', message: 'marked failed by ops: VM removed by hand' },
      });
      expect(executor.calls).toEqual([
        expect.objectContaining({ call: 'recordFailure', error: expect.objectContaining({ code: 'INTERNAL_ERROR' }) }),
      ]);
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'done', lease_owner: null })]);
      expect((await metrics.jobsFinished.get()).values).toEqual([
        { value: 1, labels: { type: 'vm.stop', provider: 'none', outcome: 'INTERNAL_ERROR' } },
      ]);
    });

    it('leaves a failed job and its row as they were when its resource cannot take the operation again', async () => {
      const id = await admitted();
      await recovery.recover(id, 'mark-failed', 'first', OPS);
      executor.reopenRefusal = new HcpError('CONFLICT', 'the VM of this job is gone');

      await expect(recovery.recover(id, 'retry', 'again', OPS)).rejects.toMatchObject({ code: 'CONFLICT' });

      expect((await jobs.load(id)).state).toMatchObject({ status: 'failed' });
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'done', lease_owner: null })]);
    });

    it('re-queues a failed job its resource takes again', async () => {
      const id = await admitted();
      await recovery.recover(id, 'mark-failed', 'first', OPS);

      const view = await recovery.recover(id, 'retry', 'provider fixed', OPS);

      expect(view).toMatchObject({ status: 'queued', attempts: 0, finished_at: null });
      expect(executor.callNames()).toEqual(['recordFailure', 'reopen']);
      expect(await rows([id])).toEqual([expect.objectContaining({ status: 'queued', due: true })]);
    });
  });
});
