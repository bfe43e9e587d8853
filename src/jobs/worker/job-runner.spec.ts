import { Logger } from '@nestjs/common';
import { register } from 'prom-client';
import {
  createHcpUpcasters,
  decideJob,
  HcpError,
  HcpErrorShape,
  JobCommand,
  JobEvent,
  JobQueued,
  JobType,
  jobEvent,
  jobStreamId,
} from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { ScriptedJobExecutor } from '../../../test/fakes/scripted-job-executor';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { JobRepository } from '../job.repository';
import { LeasedJob } from '../queue/job-queue';
import { JOB_WORKER_ACTOR } from './job-executor';
import { JobExecutors } from './job-executors';
import { JobPolicy, JobRunner, WorkerStopping } from './job-runner';

const NOW = new Date('2026-03-01T12:00:00.000Z');
const WORKER = 'worker-a';
const TRACE = 'trace-1';
const POLICY: JobPolicy = { maxAttempts: 3, retryBackoffMs: 1_000, attemptTimeoutMs: 30_000 };
const UNAVAILABLE: HcpErrorShape = {
  code: 'PROVIDER_UNAVAILABLE',
  message: 'the provider did not answer',
  retryable: true,
};
const LEASE_EXPIRED: HcpErrorShape = {
  code: 'PROVIDER_TIMEOUT',
  message: 'the worker running this job stopped answering',
  retryable: true,
};

// prom-client registers every metric in its global registry: one HcpMetrics per spec file, reset before each spec.
const metrics = new HcpMetrics();

describe('JobRunner', () => {
  let store: InMemoryEventStore;
  let codec: DomainEventCodec;
  let jobs: JobRepository;
  let executors: JobExecutors;
  let executor: ScriptedJobExecutor;
  let runner: JobRunner;
  let lease: AbortController;
  let jobCount = 0;

  beforeEach(() => {
    // Only the clock is fixed (retry_at, deadlines and event times); promises and timers stay real.
    jest.useFakeTimers({
      now: NOW,
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    jest.spyOn(Math, 'random').mockReturnValue(0.5); // backoff jitter factor 1.0
    register.resetMetrics();
    store = new InMemoryEventStore();
    codec = new DomainEventCodec(createHcpUpcasters());
    jobs = new JobRepository(store, codec);
    executors = new JobExecutors();
    executor = new ScriptedJobExecutor();
    executors.register('vm', executor);
    runner = new JobRunner(jobs, executors, metrics);
    lease = new AbortController();
  });

  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  interface GivenJob {
    id: string;
    lease: LeasedJob;
    /** How many events the job's stream holds before the runner acts. */
    given: number;
  }

  /** GIVEN a job queued by alice (through the real repository), then the job commands in `history`. */
  async function givenJob(
    history: JobCommand[] = [],
    type: JobType = 'vm.start',
    deadline: Date | null = null,
  ): Promise<GivenJob> {
    const id = `job-${++jobCount}`;
    const queued = jobEvent<JobQueued>('JobQueued', {
      job_id: id,
      project_id: 'p-1',
      type,
      resource_id: 'vm-1',
      trace_id: TRACE,
      actor: 'alice',
      params: {},
      ...(deadline ? { deadline: deadline.toISOString() } : {}),
    });
    await jobs.ensureQueued(queued, eventContext('alice', TRACE));
    for (const command of history) {
      const loaded = await jobs.load(id);
      await jobs.append(loaded, decideJob(loaded.state, command), eventContext(JOB_WORKER_ACTOR, TRACE));
    }
    const leased: LeasedJob = {
      job_id: id,
      project_id: 'p-1',
      type,
      resource_id: 'vm-1',
      leases: history.length + 1,
      reclaimed: false,
    };
    return { id, lease: leased, given: history.length + 1 };
  }

  const started = (worker = 'worker-old'): JobCommand => ({ type: 'start', worker });
  const attemptFailed = (error: HcpErrorShape = UNAVAILABLE): JobCommand => ({
    type: 'fail_attempt',
    error,
    retry_at: NOW.toISOString(),
  });

  /** THEN: the events the runner appended to the job's stream, decoded. */
  async function eventsWritten(job: GivenJob): Promise<JobEvent[]> {
    const recorded = await store.readStream(jobStreamId(job.id), { fromRevision: BigInt(job.given) });
    return recorded.map((r) => codec.decode<JobEvent>(r).event);
  }

  async function streamTypes(job: GivenJob): Promise<string[]> {
    return (await store.readStream(jobStreamId(job.id))).map((r) => r.type);
  }

  const run = (job: GivenJob, policy: JobPolicy = POLICY) => runner.run(job.lease, WORKER, policy, lease.signal);
  const counterValue = async (
    metric: { get(): Promise<{ values: Array<{ value: number; labels: object }> }> },
    labels: object = {},
  ) => (await metric.get()).values.find((v) => JSON.stringify(v.labels) === JSON.stringify(labels))?.value ?? 0;
  const at = (ms: number) => new Date(NOW.getTime() + ms);

  describe('a job that is over', () => {
    it.each([
      ['succeeded', [started(), { type: 'succeed' }] as JobCommand[]],
      ['failed', [{ type: 'fail', error: UNAVAILABLE }] as JobCommand[]],
    ])('finishes a job that has %s already without touching it', async (_status, history) => {
      const job = await givenJob(history);

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([]);
      expect(executor.calls).toEqual([]);
    });

    it('finishes a leased job that has no stream without writing one', async () => {
      const result = await runner.run(
        {
          job_id: 'job-unknown',
          project_id: 'p-1',
          type: 'vm.start',
          resource_id: 'vm-1',
          leases: 1,
          reclaimed: false,
        },
        WORKER,
        POLICY,
        lease.signal,
      );

      expect(result).toEqual({ kind: 'finished' });
      expect(await store.readStream(jobStreamId('job-unknown'))).toEqual([]);
      expect(executor.calls).toEqual([]);
    });
  });

  describe('a job whose previous holder lost its lease', () => {
    it('writes off the running attempt as PROVIDER_TIMEOUT, counts the lease expiry and runs the job again', async () => {
      const job = await givenJob([started('worker-old')]);
      executor.willAnswer(executor.done());

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobAttemptFailed', { attempt: 1, error: LEASE_EXPIRED, retry_at: NOW.toISOString() }),
        jobEvent('JobStarted', { attempt: 2, worker: WORKER }),
        jobEvent('JobSucceeded', { attempt: 2 }),
      ]);
      expect(await counterValue(metrics.leaseExpiries)).toBe(1);
    });

    it('fails the job when the written-off attempt was its last, and lets the executor record the failure on the resource', async () => {
      const job = await givenJob([...failedAttempts(2), started('worker-old')]);

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobAttemptFailed', { attempt: 3, error: LEASE_EXPIRED, retry_at: NOW.toISOString() }),
        jobEvent('JobFailed', { attempt: 3, error: LEASE_EXPIRED }),
      ]);
      expect(executor.callNames()).toEqual(['recordFailure']);
      expect(executor.calls[0]).toMatchObject({
        call: 'recordFailure',
        job: { id: job.id, status: 'queued', attempts: 3 },
        error: LEASE_EXPIRED,
      });
      expect(await counterValue(metrics.leaseExpiries)).toBe(1);
    });
  });

  describe('a job that has used up its attempts', () => {
    it('fails with the error of its last attempt, recorded on the resource first, without performing again', async () => {
      const job = await givenJob(failedAttempts(3));

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([jobEvent('JobFailed', { attempt: 3, error: UNAVAILABLE })]);
      expect(executor.callNames()).toEqual(['recordFailure']);
      expect(executor.calls[0]).toMatchObject({
        call: 'recordFailure',
        job: { id: job.id, attempts: 3 },
        error: UNAVAILABLE,
      });
    });
  });

  describe('an attempt', () => {
    it('is started (JobStarted with the worker) before the executor performs it, with the deadline, signal and trace', async () => {
      const job = await givenJob();
      let streamWhilePerforming: string[] = [];
      executor.willAnswer(async () => {
        streamWhilePerforming = await streamTypes(job);
        return executor.done();
      });

      await run(job);

      expect(streamWhilePerforming).toEqual(['JobQueued', 'JobStarted']);
      const [performed] = executor.calls;
      expect(performed).toMatchObject({
        call: 'perform',
        job: { id: job.id, type: 'vm.start', status: 'running', attempts: 1, resource_id: 'vm-1' },
      });
      expect(performed).toMatchObject({
        attempt: { worker: WORKER, deadline: at(POLICY.attemptTimeoutMs), signal: lease.signal, trace_id: TRACE },
      });
      expect((await eventsWritten(job))[0]).toEqual(jobEvent('JobStarted', { attempt: 1, worker: WORKER }));
    });

    it('records success after the executor recorded the outcome on the resource, and counts the job as succeeded', async () => {
      const job = await givenJob();
      let streamWhileRecording: string[] = [];
      executor.willAnswer(
        executor.done('simulator', async () => {
          streamWhileRecording = await streamTypes(job);
        }),
      );

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(streamWhileRecording).toEqual(['JobQueued', 'JobStarted']);
      expect(executor.callNames()).toEqual(['perform', 'record']);
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobSucceeded', { attempt: 1 }),
      ]);
      expect(
        await counterValue(metrics.jobsFinished, { type: 'vm.start', provider: 'simulator', outcome: 'succeeded' }),
      ).toBe(1);
    });

    it('hands the executor its JobSucceeded to commit with the outcome, and appends nothing after it', async () => {
      const job = await givenJob();
      const appendsBefore = jest.spyOn(store, 'append');
      executor.willAnswer(executor.done('simulator', undefined, store));

      await run(job);

      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobSucceeded', { attempt: 1 }),
      ]);
      // JobStarted went through append; JobSucceeded only through the executor's appendMany.
      expect(appendsBefore).toHaveBeenCalledTimes(1);
    });

    it("stamps the job's end with the time of the outcome it commits with, so the job never ends before it", async () => {
      const job = await givenJob();
      const outcomeAt = '2099-01-02T03:04:05.678Z';
      executor.willAnswer({
        kind: 'done',
        target: 'simulator',
        record: async (closing) => {
          await store.appendMany(closing!(outcomeAt).appends);
          return true;
        },
      });

      await run(job);

      const ended = (await store.readStream(`job-${job.id}`)).find((e) => e.type === 'JobSucceeded');
      expect(ended?.metadata).toMatchObject({ occurred_at: outcomeAt });
    });

    it('refuses to end a job that another writer moved while its outcome was recorded (CONFLICT, no JobSucceeded)', async () => {
      const job = await givenJob();
      executor.willAnswer(
        executor.done(
          'simulator',
          async () => {
            // Another writer (ops, a worker that took the job over) wrote on the job meanwhile.
            const loaded = await jobs.load(job.id);
            await jobs.append(
              loaded,
              decideJob(loaded.state, { type: 'record_fact', key: 'k', value: 1 }),
              eventContext('ops', TRACE),
            );
          },
          store,
        ),
      );

      await expect(run(job)).rejects.toMatchObject({ code: 'CONFLICT' });
      expect((await eventsWritten(job)).map((e) => e.type)).toEqual(['JobStarted', 'JobFactRecorded']);
    });

    it('writes its events as the worker, on the trace of the request', async () => {
      const job = await givenJob();
      executor.willAnswer(executor.done());

      await run(job);

      const recorded = await store.readStream(jobStreamId(job.id), { fromRevision: BigInt(job.given) });
      expect(recorded.map((r) => codec.decode(r).context)).toEqual([
        { actor: JOB_WORKER_ACTOR, trace_id: TRACE, occurred_at: NOW.toISOString() },
        { actor: JOB_WORKER_ACTOR, trace_id: TRACE, occurred_at: NOW.toISOString() },
      ]);
    });
  });

  describe('an attempt that failed', () => {
    it.each(['PROVIDER_UNAVAILABLE', 'PROVIDER_TIMEOUT', 'RATE_LIMITED'] as const)(
      'schedules a retry after the backoff for %s while attempts remain',
      async (code) => {
        const job = await givenJob();
        const error = new HcpError(code, 'try again later');
        executor.willAnswer({ kind: 'failed', target: 'simulator', error });

        const result = await run(job);

        expect(result).toEqual({ kind: 'retry', at: at(POLICY.retryBackoffMs) });
        expect(await eventsWritten(job)).toEqual([
          jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
          jobEvent('JobAttemptFailed', {
            attempt: 1,
            error: { code, message: 'try again later', retryable: true },
            retry_at: at(POLICY.retryBackoffMs).toISOString(),
          }),
        ]);
        expect(executor.callNames()).toEqual(['perform']);
        expect(await counterValue(metrics.jobRetries, { code })).toBe(1);
        expect((await metrics.jobsFinished.get()).values).toEqual([]);
      },
    );

    it.each([
      [2, 0.5, 4_000], // base * 2^(3-1)
      [1, 0, 1_600], // base * 2^(2-1) * 0.8 (least jitter)
      [1, 0.999_999, 2_400], // base * 2^(2-1) * 1.2 (most jitter)
    ])(
      'backs off exponentially with the attempts already made (%i before this one, random %d): %i ms',
      async (before, random, backoffMs) => {
        (Math.random as jest.Mock).mockReturnValue(random);
        const job = await givenJob(failedAttempts(before));
        executor.willAnswer({
          kind: 'failed',
          target: 'simulator',
          error: new HcpError('PROVIDER_UNAVAILABLE', 'down'),
        });

        const result = await run(job, { ...POLICY, maxAttempts: 5 });

        expect(result).toEqual({ kind: 'retry', at: at(backoffMs) });
      },
    );

    it('waits at most five minutes before the next attempt', async () => {
      const job = await givenJob(failedAttempts(3));
      executor.willAnswer({ kind: 'failed', target: 'simulator', error: new HcpError('PROVIDER_UNAVAILABLE', 'down') });

      const result = await run(job, { ...POLICY, maxAttempts: 5, retryBackoffMs: 60_000 });

      expect(result).toEqual({ kind: 'retry', at: at(5 * 60_000) }); // 60s * 2^3 = 8 min, capped
    });

    it.each([
      ['a non-retryable code', new HcpError('FEATURE_NOT_SUPPORTED', 'no reboot on this provider')],
      [
        'a retryable code the thrower marked final',
        new HcpError('PROVIDER_UNAVAILABLE', "the VM's provider is not registered any more", undefined, false),
      ],
    ])('fails for good on %s: the resource records the failure, then the job fails', async (_case, error) => {
      const job = await givenJob();
      executor.willAnswer({ kind: 'failed', target: 'simulator', error });

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobFailed', { attempt: 1, error: error.toShape() }),
      ]);
      expect(executor.callNames()).toEqual(['perform', 'recordFailure']);
      expect(executor.calls[1]).toMatchObject({
        call: 'recordFailure',
        job: { id: job.id, status: 'running', attempts: 1 },
        error: error.toShape(),
      });
      expect(
        await counterValue(metrics.jobsFinished, { type: 'vm.start', provider: 'simulator', outcome: error.code }),
      ).toBe(1);
      expect((await metrics.jobRetries.get()).values).toEqual([]);
    });

    it('fails for good on a retryable error in the last attempt', async () => {
      const job = await givenJob(failedAttempts(2));
      executor.willAnswer({ kind: 'failed', target: 'simulator', error: HcpError.fromShape(UNAVAILABLE) });

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 3, worker: WORKER }),
        jobEvent('JobFailed', { attempt: 3, error: UNAVAILABLE }),
      ]);
      expect(executor.callNames()).toEqual(['perform', 'recordFailure']);
      expect(
        await counterValue(metrics.jobsFinished, {
          type: 'vm.start',
          provider: 'simulator',
          outcome: 'PROVIDER_UNAVAILABLE',
        }),
      ).toBe(1);
      expect((await metrics.jobRetries.get()).values).toEqual([]);
    });

    it('retries an attempt that lost its database connection, as PROVIDER_UNAVAILABLE naming the database', async () => {
      jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const job = await givenJob();
      const terminated = Object.assign(new Error('terminating connection due to administrator command'), {
        code: '57P01',
      });
      executor.willAnswer({ kind: 'failed', target: 'simulator', error: terminated });

      const result = await run(job);

      expect(result).toMatchObject({ kind: 'retry' });
      const written = await eventsWritten(job);
      expect(written.map((e) => e.type)).toEqual(['JobStarted', 'JobAttemptFailed']);
      expect(written[1].data).toMatchObject({
        attempt: 1,
        error: { code: 'PROVIDER_UNAVAILABLE', retryable: true, details: { dependency: 'database' } },
      });
      expect(executor.callNames()).toEqual(['perform']);
    });

    it('wraps an error outside the taxonomy into INTERNAL_ERROR, without its message, and logs it', async () => {
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const job = await givenJob();
      executor.willAnswer({
        kind: 'failed',
        target: 'simulator',
        error: new TypeError('cannot read properties of undefined (secret=hunter2)'),
      });

      const result = await run(job);

      const internal: HcpErrorShape = { code: 'INTERNAL_ERROR', message: 'internal error', retryable: false };
      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobFailed', { attempt: 1, error: internal }),
      ]);
      expect(executor.calls[1]).toMatchObject({ call: 'recordFailure', error: internal });
      expect(logged).toHaveBeenCalledWith(
        `job ${job.id}: failed unexpectedly: TypeError: cannot read properties of undefined (secret=hunter2)`,
      );
    });
  });

  describe('a job whose lease was lost while it ran', () => {
    it.each([
      ['was done', () => executor.done()],
      ['failed', () => ({ kind: 'failed' as const, target: 'simulator', error: HcpError.fromShape(UNAVAILABLE) })],
    ])('is left to its new holder when its work %s, without writing an outcome', async (_kind, work) => {
      const job = await givenJob();
      executor.willAnswer(() => {
        lease.abort();
        return work();
      });

      const result = await run(job);

      expect(result).toEqual({ kind: 'lease_lost' });
      expect(await eventsWritten(job)).toEqual([jobEvent('JobStarted', { attempt: 1, worker: WORKER })]);
      expect(executor.callNames()).toEqual(['perform']);
      expect((await metrics.jobsFinished.get()).values).toEqual([]);
    });
  });

  describe('a job its resource had settled already', () => {
    it('succeeds when the resource recorded no error', async () => {
      const job = await givenJob();
      executor.willAnswer({ kind: 'settled', error: null });

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobSucceeded', { attempt: 1 }),
      ]);
      expect(executor.callNames()).toEqual(['perform']);
    });

    it('fails with the error the resource recorded, without recording it on the resource again', async () => {
      const job = await givenJob();
      executor.willAnswer({ kind: 'settled', error: UNAVAILABLE });

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobFailed', { attempt: 1, error: UNAVAILABLE }),
      ]);
      expect(executor.callNames()).toEqual(['perform']);
    });
  });

  describe('a job of a kind no executor runs', () => {
    it('fails with INTERNAL_ERROR without starting it', async () => {
      runner = new JobRunner(jobs, new JobExecutors(), metrics);
      const job = await givenJob([], 'vm.reboot');

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobFailed', {
          attempt: 0,
          error: { code: 'INTERNAL_ERROR', message: 'no executor runs vm.reboot jobs', retryable: false },
        }),
      ]);
    });
  });

  describe('a job whose worker stops while it runs', () => {
    it('gives the attempt back when the stop aborted its work: released, not failed, and not counted as finished', async () => {
      const job = await givenJob();
      executor.willAnswer(() => {
        lease.abort(new WorkerStopping());
        return { kind: 'failed', target: 'simulator', error: new HcpError('PROVIDER_TIMEOUT', 'aborted') };
      });

      const result = await run(job);

      expect(result).toEqual({ kind: 'released' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobAttemptReleased', { attempt: 1, worker: WORKER, reason: 'worker_stopping' }),
      ]);
      expect(executor.callNames()).toEqual(['perform']);
      expect((await metrics.jobsFinished.get()).values).toEqual([]);
      expect((await metrics.jobRetries.get()).values).toEqual([]);
    });

    it('starts the given-back job again with the same attempt number', async () => {
      const job = await givenJob([started(WORKER), { type: 'release', worker: WORKER }]);
      executor.willAnswer(executor.done());

      await run(job);

      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobSucceeded', { attempt: 1 }),
      ]);
    });

    it('records work that was done before the stop, as the lease is still held', async () => {
      const job = await givenJob();
      executor.willAnswer(() => {
        lease.abort(new WorkerStopping());
        return executor.done();
      });

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(executor.callNames()).toEqual(['perform', 'record']);
      expect((await eventsWritten(job)).map((e) => e.type)).toEqual(['JobStarted', 'JobSucceeded']);
    });
  });

  describe('a job with a deadline', () => {
    const TIMED_OUT = (deadline: Date, last?: HcpErrorShape): HcpErrorShape => ({
      code: 'PROVIDER_TIMEOUT',
      message: `the job did not finish by its deadline (${deadline.toISOString()})`,
      details: {
        deadline: deadline.toISOString(),
        ...(last ? { last_error: { code: last.code, message: last.message } } : {}),
      },
      retryable: false,
    });

    it('records the deadline of HCP_JOB_DEADLINE_MS from the request on the job when it is opened', async () => {
      const job = await givenJob();

      expect((await jobs.load(job.id)).state!.deadline).toBe(at(30 * 60_000).toISOString());
    });

    it('fails a job leased past its deadline with PROVIDER_TIMEOUT, the resource recording the failure, without performing', async () => {
      const deadline = at(-1);
      const job = await givenJob(failedAttempts(1), 'vm.start', deadline);

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobFailed', { attempt: 1, error: TIMED_OUT(deadline, UNAVAILABLE) }),
      ]);
      expect(executor.callNames()).toEqual(['recordFailure']);
      expect(
        await counterValue(metrics.jobsFinished, { type: 'vm.start', provider: 'none', outcome: 'PROVIDER_TIMEOUT' }),
      ).toBe(1);
    });

    it('gives the attempt no longer than the job has left', async () => {
      const job = await givenJob([], 'vm.start', at(10_000));
      executor.willAnswer(executor.done());

      await run(job);

      expect(executor.calls[0]).toMatchObject({ call: 'perform', attempt: { deadline: at(10_000) } });
    });

    it('fails with PROVIDER_TIMEOUT instead of planning a retry past the deadline, naming the last error', async () => {
      const deadline = at(POLICY.retryBackoffMs - 1);
      const job = await givenJob([], 'vm.start', deadline);
      executor.willAnswer({ kind: 'failed', target: 'simulator', error: HcpError.fromShape(UNAVAILABLE) });

      const result = await run(job);

      expect(result).toEqual({ kind: 'finished' });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobFailed', { attempt: 1, error: TIMED_OUT(deadline, UNAVAILABLE) }),
      ]);
      expect(executor.callNames()).toEqual(['perform', 'recordFailure']);
      expect((await metrics.jobRetries.get()).values).toEqual([]);
      expect(
        await counterValue(metrics.jobsFinished, {
          type: 'vm.start',
          provider: 'simulator',
          outcome: 'PROVIDER_TIMEOUT',
        }),
      ).toBe(1);
    });

    describe('when the deadline sweep took it', () => {
      it('fails a waiting job past its deadline, the resource recording the failure', async () => {
        const deadline = at(-1);
        const job = await givenJob(failedAttempts(1), 'vm.start', deadline);

        const result = await runner.expire(job.lease);

        expect(result).toEqual({ kind: 'finished' });
        expect(await eventsWritten(job)).toEqual([
          jobEvent('JobFailed', { attempt: 1, error: TIMED_OUT(deadline, UNAVAILABLE) }),
        ]);
        expect(executor.callNames()).toEqual(['recordFailure']);
      });

      it('fails a job a dead worker held running, without writing its attempt off first', async () => {
        const deadline = at(-1);
        const job = await givenJob([started('worker-dead')], 'vm.start', deadline);

        await runner.expire(job.lease);

        expect(await eventsWritten(job)).toEqual([jobEvent('JobFailed', { attempt: 1, error: TIMED_OUT(deadline) })]);
      });

      it('hands back, due now, a job whose deadline has not passed', async () => {
        const job = await givenJob([], 'vm.start', at(1));

        expect(await runner.expire(job.lease)).toEqual({ kind: 'retry', at: NOW });
        expect(await eventsWritten(job)).toEqual([]);
      });

      it('leaves a finished job as it is', async () => {
        const job = await givenJob([started(), { type: 'succeed' }], 'vm.start', at(-1));

        expect(await runner.expire(job.lease)).toEqual({ kind: 'finished' });
        expect(await eventsWritten(job)).toEqual([]);
      });
    });
  });

  describe('hcp_jobs_finished_total', () => {
    it.each([
      ['settled as succeeded', { kind: 'settled', error: null } as const, 'succeeded'],
      ['settled as failed', { kind: 'settled', error: UNAVAILABLE } as const, 'PROVIDER_UNAVAILABLE'],
    ])('counts a job %s once, without a provider', async (_case, work, outcome) => {
      const job = await givenJob();
      executor.willAnswer(work);

      await run(job);

      expect((await metrics.jobsFinished.get()).values).toEqual([
        { value: 1, labels: { type: 'vm.start', provider: 'none', outcome } },
      ]);
    });

    it('counts a job that ran out of attempts once, with the error of its last attempt', async () => {
      const job = await givenJob(failedAttempts(3));

      await run(job);

      expect((await metrics.jobsFinished.get()).values).toEqual([
        { value: 1, labels: { type: 'vm.start', provider: 'none', outcome: 'PROVIDER_UNAVAILABLE' } },
      ]);
    });

    it('counts a job no executor runs once, as INTERNAL_ERROR', async () => {
      runner = new JobRunner(jobs, new JobExecutors(), metrics);
      const job = await givenJob([], 'vm.reboot');

      await run(job);

      expect((await metrics.jobsFinished.get()).values).toEqual([
        { value: 1, labels: { type: 'vm.reboot', provider: 'none', outcome: 'INTERNAL_ERROR' } },
      ]);
    });

    it('does not count a job that was over already when leased again', async () => {
      const job = await givenJob([started(), { type: 'succeed' }]);

      await run(job);

      expect((await metrics.jobsFinished.get()).values).toEqual([]);
    });
  });

  describe('facts an attempt records', () => {
    const CLONE = { node: 'pve1', vmid: 104 };

    it('are appended on the job stream while the attempt runs, and handed to the next attempt in recorded', async () => {
      const job = await givenJob();
      let streamAfterRecord: string[] = [];
      executor.willAnswer(async (_job, attempt) => {
        expect(attempt.recorded).toEqual({});
        await attempt.record('proxmox.clone', CLONE);
        await attempt.record('proxmox.clone', { ...CLONE }); // the same again: nothing more
        streamAfterRecord = await streamTypes(job);
        return { kind: 'failed', target: 'proxmox', error: new HcpError('PROVIDER_UNAVAILABLE', 'answer lost') };
      });

      expect(await run(job)).toMatchObject({ kind: 'retry' });
      expect(streamAfterRecord).toEqual(['JobQueued', 'JobStarted', 'JobFactRecorded']);

      jest.setSystemTime(at(POLICY.retryBackoffMs));
      executor.willAnswer(executor.done('proxmox'));
      await run(job);

      const [, second] = executor.calls.filter((c) => c.call === 'perform') as Array<{ attempt: { recorded: object } }>;
      expect(second.attempt.recorded).toEqual({ 'proxmox.clone': CLONE });
      expect(await eventsWritten(job)).toEqual([
        jobEvent('JobStarted', { attempt: 1, worker: WORKER }),
        jobEvent('JobFactRecorded', { attempt: 1, key: 'proxmox.clone', value: CLONE }),
        jobEvent('JobAttemptFailed', {
          attempt: 1,
          error: { code: 'PROVIDER_UNAVAILABLE', message: 'answer lost', retryable: true },
          retry_at: at(POLICY.retryBackoffMs).toISOString(),
        }),
        jobEvent('JobStarted', { attempt: 2, worker: WORKER }),
        jobEvent('JobSucceeded', { attempt: 2 }),
      ]);
    });

    it('are refused once the lease is lost, with nothing written', async () => {
      const job = await givenJob();
      let refusal: unknown = null;
      executor.willAnswer(async (_job, attempt) => {
        lease.abort();
        refusal = await attempt.record('proxmox.clone', CLONE).catch((err: unknown) => err);
        return { kind: 'failed', target: 'proxmox', error: refusal };
      });

      expect(await run(job)).toEqual({ kind: 'lease_lost' });
      expect(refusal).toMatchObject({ code: 'CONFLICT' });
      expect(await streamTypes(job)).toEqual(['JobQueued', 'JobStarted']);
    });

    it('are refused when another writer moved the job meanwhile (a worker that took it over)', async () => {
      const job = await givenJob();
      let refusal: unknown = null;
      executor.willAnswer(async (_job, attempt) => {
        const taken = await jobs.load(job.id);
        await jobs.append(taken, decideJob(taken.state, attemptFailed(LEASE_EXPIRED)), eventContext('other', TRACE));
        refusal = await attempt.record('proxmox.clone', CLONE).catch((err: unknown) => err);
        return { kind: 'failed', target: 'proxmox', error: refusal };
      });

      await run(job).catch(() => undefined); // its own next step loses to the other writer as well

      expect(refusal).toMatchObject({ code: 'CONFLICT' });
      expect(await streamTypes(job)).toEqual(['JobQueued', 'JobStarted', 'JobAttemptFailed']);
    });
  });

  /** `n` attempts that each started and failed with PROVIDER_UNAVAILABLE; the job is queued again. */
  function failedAttempts(n: number): JobCommand[] {
    return Array.from({ length: n }, (_, i) => [started(`worker-${i}`), attemptFailed()]).flat();
  }
});
