import {
  createHcpUpcasters,
  decideJob,
  evolveJob,
  JobEvent,
  JobQueued,
  JobState,
  jobEvent,
  jobStreamId,
} from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { AggregateRepository, FROM_REMEMBERED } from './aggregate-repository';
import { eventContext } from './event-context';

describe('AggregateRepository', () => {
  let store: InMemoryEventStore;
  let codec: DomainEventCodec;

  beforeEach(() => {
    store = new InMemoryEventStore();
    codec = new DomainEventCodec(createHcpUpcasters());
  });

  const repository = (cacheSize: number) =>
    new AggregateRepository<JobState, JobEvent>(store, codec, jobStreamId, evolveJob, cacheSize);

  async function givenJob(id: string): Promise<void> {
    const queued = jobEvent<JobQueued>('JobQueued', {
      job_id: id,
      project_id: 'p-1',
      type: 'vm.start',
      resource_id: 'vm-1',
      trace_id: 'trace-1',
      actor: 'alice',
      params: {},
      deadline: '2026-03-01T13:00:00.000Z',
    });
    await store.append(jobStreamId(id), [codec.encode(queued, eventContext('alice', 'trace-1'), id)], 'no_stream');
  }

  it('reads only the events after the revision it folded last time', async () => {
    const jobs = repository(10);
    await givenJob('job-1');
    await jobs.load('job-1');
    const reads = jest.spyOn(store, 'readStream');

    const again = await jobs.load('job-1');

    expect(reads).toHaveBeenCalledWith(jobStreamId('job-1'), { fromRevision: 1n });
    expect(again.state).toMatchObject({ id: 'job-1', status: 'queued' });
  });

  it('beyond its cache size reads the least recently used aggregate from its start again, to the same state', async () => {
    const jobs = repository(2);
    for (const id of ['job-1', 'job-2', 'job-3']) await givenJob(id);
    await jobs.load('job-1');
    await jobs.load('job-2');
    await jobs.load('job-1'); // job-2 is now the least recently used
    await jobs.load('job-3');
    const reads = jest.spyOn(store, 'readStream');

    await jobs.load('job-1');
    const reloaded = await jobs.load('job-2');

    expect(reads.mock.calls).toEqual([
      [jobStreamId('job-1'), { fromRevision: 1n }],
      [jobStreamId('job-2'), {}],
    ]);
    expect(reloaded.state).toEqual((await repository(2).load('job-2')).state);
    expect(reloaded.state).toMatchObject({ id: 'job-2', status: 'queued' });
  });

  describe('deciding on the state it remembers (FROM_REMEMBERED)', () => {
    const context = eventContext('worker', 'trace-1');
    const start = (worker: string) => (state: JobState | null) => decideJob(state, { type: 'start', worker });
    const recordFact = (state: JobState | null) =>
      decideJob(state, { type: 'record_fact', key: 'clone', value: 'c-1' });
    const statuses = async (id: string) =>
      (await store.readStream(jobStreamId(id))).map((e) => codec.decode<JobEvent>(e).event.type);

    it('appends without reading the stream again', async () => {
      const jobs = repository(10);
      await givenJob('job-1');
      await jobs.load('job-1');
      const reads = jest.spyOn(store, 'readStream');

      const { state } = await jobs.update('job-1', start('w-1'), context, FROM_REMEMBERED);

      expect(reads).not.toHaveBeenCalled();
      expect(state).toMatchObject({ status: 'running' });
      expect(await statuses('job-1')).toEqual(['JobQueued', 'JobStarted']);
    });

    it('decides again on a fresh load when the stream moved since, without counting it as contention', async () => {
      const ours = repository(10);
      await givenJob('job-1');
      await ours.load('job-1');
      await repository(10).update('job-1', start('w-2'), context);
      const seen: string[] = [];

      const { state } = await ours.update(
        'job-1',
        (s) => {
          seen.push(s!.status);
          return decideJob(s, { type: 'fail', error: { code: 'INTERNAL_ERROR', message: 'x', retryable: false } });
        },
        context,
        { ...FROM_REMEMBERED, attempts: 1 },
      );

      expect(seen).toEqual(['queued', 'running']);
      expect(state).toMatchObject({ status: 'failed' });
      expect(await statuses('job-1')).toEqual(['JobQueued', 'JobStarted', 'JobFailed']);
    });

    it('takes a refusal on the remembered state for its age, and decides again on a fresh load', async () => {
      const ours = repository(10);
      await givenJob('job-1');
      await ours.load('job-1');
      // Another process started it: the remembered job is still queued, where a fact is refused.
      await repository(10).update('job-1', start('w-2'), context);

      const { state } = await ours.update('job-1', recordFact, context, FROM_REMEMBERED);

      expect(state?.facts).toEqual({ clone: 'c-1' });
      expect(await statuses('job-1')).toEqual(['JobQueued', 'JobStarted', 'JobFactRecorded']);
    });

    it('reads the stream as usual when it remembers nothing', async () => {
      await givenJob('job-1');
      const reads = jest.spyOn(store, 'readStream');

      const { state } = await repository(10).update('job-1', start('w-1'), context, FROM_REMEMBERED);

      expect(reads).toHaveBeenCalledWith(jobStreamId('job-1'), {});
      expect(state).toMatchObject({ status: 'running' });
    });
  });
});
