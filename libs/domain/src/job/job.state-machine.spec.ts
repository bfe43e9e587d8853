import { HcpError, HcpErrorShape } from '../errors';
import { VmRequestEvent } from '../vm/vm.events';
import { jobQueuedFor } from './job-of-request';
import { JobEvent } from './job.events';
import { decideJob, evolveJob, JobState } from './job.state-machine';

const AT = '2026-01-01T00:00:00.000Z';
const ERR: HcpErrorShape = { code: 'PROVIDER_UNAVAILABLE', message: 'down', retryable: true };

function apply(state: JobState | null, events: JobEvent[]): JobState | null {
  return events.reduce<JobState | null>((s, e) => evolveJob(s, e, AT), state);
}

const request: VmRequestEvent = {
  type: 'VmStopRequested',
  version: 1,
  data: { job_id: 'j1', project_id: 'p1', force: true },
};
const queued = () => apply(null, [jobQueuedFor(request, 'vm-1', { trace_id: 't', actor: 'alice' })])!;

function expectConflict(fn: () => unknown) {
  expect(fn).toThrow(HcpError);
  try {
    fn();
  } catch (err) {
    expect((err as HcpError).code).toBe('CONFLICT');
  }
}

describe('job state machine', () => {
  it('derives the queued job from the VM request it serves', () => {
    expect(queued()).toMatchObject({
      id: 'j1',
      type: 'vm.stop',
      status: 'queued',
      attempts: 0,
      params: { force: true },
      resource_id: 'vm-1',
    });
  });

  it('runs, fails an attempt, runs again and succeeds, counting attempts', () => {
    let job = apply(queued(), decideJob(queued(), { type: 'start', worker: 'w1' }))!;
    expect(job).toMatchObject({ status: 'running', attempts: 1 });
    job = apply(job, decideJob(job, { type: 'fail_attempt', error: ERR, retry_at: AT }))!;
    expect(job).toMatchObject({ status: 'queued', attempts: 1, error: ERR, retry_at: AT });
    job = apply(job, decideJob(job, { type: 'start', worker: 'w2' }))!;
    expect(job.attempts).toBe(2);
    job = apply(job, decideJob(job, { type: 'succeed' }))!;
    expect(job).toMatchObject({ status: 'succeeded', error: null, finished_at: AT });
  });

  it('fails for good from running or from queued', () => {
    const running = apply(queued(), decideJob(queued(), { type: 'start', worker: 'w' }))!;
    expect(apply(running, decideJob(running, { type: 'fail', error: ERR }))!.status).toBe('failed');
    expect(apply(queued(), decideJob(queued(), { type: 'fail', error: ERR }))!.status).toBe('failed');
  });

  it('rejects starting a running job and succeeding a queued one', () => {
    const running = apply(queued(), decideJob(queued(), { type: 'start', worker: 'w' }))!;
    expectConflict(() => decideJob(running, { type: 'start', worker: 'w' }));
    expectConflict(() => decideJob(queued(), { type: 'succeed' }));
    expectConflict(() => decideJob(queued(), { type: 'fail_attempt', error: ERR, retry_at: AT }));
  });

  it('rejects every command once finished', () => {
    const running = apply(queued(), decideJob(queued(), { type: 'start', worker: 'w' }))!;
    const done = apply(running, decideJob(running, { type: 'succeed' }))!;
    for (const cmd of [{ type: 'start', worker: 'w' }, { type: 'succeed' }, { type: 'fail', error: ERR }] as const) {
      expectConflict(() => decideJob(done, cmd));
    }
  });

  it('rejects commands for a job that was never queued', () => {
    expectConflict(() => decideJob(null, { type: 'succeed' }));
  });
});
