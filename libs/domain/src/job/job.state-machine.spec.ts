import { HcpError, HcpErrorShape } from '../errors';
import { createHcpUpcasters } from '../hcp-events';
import { VmRequestEvent } from '../vm/vm.events';
import { jobQueuedFor } from './job-of-request';
import { JOB_EVENT_SCHEMAS } from './job.event-schemas';
import { DEFAULT_JOB_DEADLINE_MS, JOB_RECOVERY_REASON_MAX, JobEvent, JobQueued } from './job.events';
import {
  decideJob,
  evolveJob,
  JobCommand,
  jobDeadlineError,
  jobDeadlinePassed,
  JobState,
  JobStatus,
} from './job.state-machine';

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

function expectRefused(fn: () => unknown, code: string) {
  expect(fn).toThrow(HcpError);
  try {
    fn();
  } catch (err) {
    expect((err as HcpError).code).toBe(code);
  }
}
const expectConflict = (fn: () => unknown) => expectRefused(fn, 'CONFLICT');

const LATER = '2026-01-01T01:00:00.000Z';
const run = (job: JobState, command: JobCommand) => apply(job, decideJob(job, command))!;
/** The job in each status, reached through the decider. */
function jobIn(status: JobStatus): JobState {
  const running = run(queued(), { type: 'start', worker: 'w1' });
  if (status === 'queued') return queued();
  if (status === 'running') return running;
  return run(running, status === 'succeeded' ? { type: 'succeed' } : { type: 'fail', error: ERR });
}
const STATUSES: JobStatus[] = ['queued', 'running', 'succeeded', 'failed'];

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

  describe('release (the worker stops)', () => {
    it('gives a running job back: waiting, due now, and the attempt taken back so the next start repeats it', () => {
      let job = run(queued(), { type: 'start', worker: 'w1' });
      const events = decideJob(job, { type: 'release', worker: 'w1' });
      expect(events).toEqual([
        { type: 'JobAttemptReleased', version: 1, data: { attempt: 1, worker: 'w1', reason: 'worker_stopping' } },
      ]);
      job = apply(job, events)!;
      expect(job).toMatchObject({ status: 'queued', attempts: 0, retry_at: null, error: null });
      expect(decideJob(job, { type: 'start', worker: 'w2' })).toEqual([
        { type: 'JobStarted', version: 1, data: { attempt: 1, worker: 'w2' } },
      ]);
    });

    it('keeps the error of an earlier failed attempt and the count of attempts that did count', () => {
      let job = run(run(queued(), { type: 'start', worker: 'w1' }), { type: 'fail_attempt', error: ERR, retry_at: AT });
      job = run(run(job, { type: 'start', worker: 'w1' }), { type: 'release', worker: 'w1' });
      expect(job).toMatchObject({ status: 'queued', attempts: 1, error: ERR });
    });

    it.each(['queued', 'succeeded', 'failed'] as const)('refuses to release a %s job', (status) => {
      expectConflict(() => decideJob(jobIn(status), { type: 'release', worker: 'w1' }));
    });
  });

  describe('deadline', () => {
    it('is the one JobQueued recorded', () => {
      const event = { ...jobQueuedFor(request, 'vm-1', { trace_id: 't', actor: 'a' }) };
      event.data = { ...event.data, deadline: LATER };
      expect(apply(null, [event])!.deadline).toBe(LATER);
    });

    it('of a job queued before deadlines (JobQueued v1) is its queued time plus the default', () => {
      const v1 = { ...jobQueuedFor(request, 'vm-1', { trace_id: 't', actor: 'a' }), version: 1 };
      const { deadline: _none, ...v1Data } = v1.data;
      const upcast = createHcpUpcasters().upcast({ ...v1, data: v1Data }) as JobQueued;
      expect(upcast).toMatchObject({ version: 2, data: { deadline: null } });
      expect(apply(null, [upcast])!.deadline).toBe(new Date(Date.parse(AT) + DEFAULT_JOB_DEADLINE_MS).toISOString());
    });

    it('has passed from its instant on, and fails the job with a final PROVIDER_TIMEOUT naming the last error', () => {
      const job = { ...queued(), deadline: LATER, error: ERR };
      expect(jobDeadlinePassed(job, new Date(Date.parse(LATER) - 1))).toBe(false);
      expect(jobDeadlinePassed(job, new Date(LATER))).toBe(true);
      expect(jobDeadlineError(job)).toMatchObject({
        code: 'PROVIDER_TIMEOUT',
        retryable: false,
        details: { deadline: LATER, last_error: { code: ERR.code, message: ERR.message } },
      });
    });
  });

  describe('recovery by ops', () => {
    const retry = { type: 'recover', action: 'retry', reason: 'provider back', deadline: LATER } as const;
    const markFailed = { type: 'recover', action: 'mark-failed', reason: 'VM fixed by hand', deadline: LATER } as const;

    it.each(['queued', 'running', 'failed'] as const)(
      'retries a %s job: waiting, due now, a fresh attempt budget and the new deadline',
      (status) => {
        const before = jobIn(status);
        const events = decideJob(before, retry);
        expect(events).toEqual([
          {
            type: 'JobRecovered',
            version: 1,
            data: { action: 'retry', reason: 'provider back', previous_status: status, deadline: LATER },
          },
        ]);
        expect(apply(before, events)).toMatchObject({
          status: 'queued',
          attempts: 0,
          finished_at: null,
          retry_at: null,
          deadline: LATER,
        });
      },
    );

    it.each(['queued', 'running'] as const)(
      'marks a %s job failed with INTERNAL_ERROR carrying the reason',
      (status) => {
        const before = jobIn(status);
        const events = decideJob(before, markFailed);
        expect(events.map((e) => e.type)).toEqual(['JobRecovered', 'JobFailed']);
        expect(events[0]!.data).toEqual({
          action: 'mark-failed',
          reason: 'VM fixed by hand',
          previous_status: status,
          deadline: null,
        });
        expect(apply(before, events)).toMatchObject({
          status: 'failed',
          attempts: before.attempts,
          error: { code: 'INTERNAL_ERROR', message: 'marked failed by ops: VM fixed by hand', retryable: false },
          finished_at: AT,
        });
      },
    );

    it('refuses to retry a succeeded job and to mark a finished job failed', () => {
      expectConflict(() => decideJob(jobIn('succeeded'), retry));
      expectConflict(() => decideJob(jobIn('succeeded'), markFailed));
      expectConflict(() => decideJob(jobIn('failed'), markFailed));
    });

    it('refuses a blank reason or one longer than the bound, whatever the status', () => {
      for (const status of STATUSES) {
        expectRefused(() => decideJob(jobIn(status), { ...retry, reason: '  ' }), 'INVALID_REQUEST');
        expectRefused(
          () => decideJob(jobIn(status), { ...markFailed, reason: 'x'.repeat(JOB_RECOVERY_REASON_MAX + 1) }),
          'INVALID_REQUEST',
        );
      }
    });

    it('refuses to recover a job that was never queued', () => {
      expectConflict(() => decideJob(null, retry));
    });
  });
  describe('facts', () => {
    const clone = { node: 'pve1', vmid: 123 };

    it('keeps the latest value of each key a running attempt records, for every later attempt', () => {
      let job = run(jobIn('running'), { type: 'record_fact', key: 'proxmox.clone', value: clone });
      job = run(job, { type: 'record_fact', key: 'proxmox.clone', value: { node: 'pve2', vmid: 124 } });
      job = run(job, { type: 'fail_attempt', error: ERR, retry_at: LATER });
      job = run(job, { type: 'start', worker: 'w2' });
      expect(job.facts).toEqual({ 'proxmox.clone': { node: 'pve2', vmid: 124 } });
      expect(job.attempts).toBe(2);
    });

    it('records nothing when the key holds that value already, whatever the order of its fields', () => {
      const job = run(jobIn('running'), { type: 'record_fact', key: 'proxmox.clone', value: clone });
      expect(decideJob(job, { type: 'record_fact', key: 'proxmox.clone', value: { vmid: 123, node: 'pve1' } })).toEqual(
        [],
      );
    });

    it('is recorded with the attempt that wrote it', () => {
      expect(decideJob(jobIn('running'), { type: 'record_fact', key: 'proxmox.clone', value: clone })).toEqual([
        { type: 'JobFactRecorded', version: 1, data: { attempt: 1, key: 'proxmox.clone', value: clone } },
      ]);
    });

    it('is refused unless an attempt runs', () => {
      for (const status of ['queued', 'succeeded', 'failed'] as const)
        expectConflict(() => decideJob(jobIn(status), { type: 'record_fact', key: 'k', value: 1 }));
    });

    it('refuses keys and values that are not bounded plain JSON, or that name a secret', () => {
      const bad: Array<[string, unknown]> = [
        ['Proxmox Clone', 1],
        ['x'.repeat(65), 1],
        ['proxmox.ticket', 'PVEVNC:abc'],
        ['proxmox.clone', { api_token: 'x' }],
        ['proxmox.clone', 'x'.repeat(1025)],
        ['proxmox.clone', { a: { b: { c: { d: { e: 1 } } } } }],
        ['proxmox.clone', new Date()],
        ['proxmox.clone', Number.NaN],
        ['proxmox.clone', undefined],
      ];
      for (const [key, value] of bad) {
        expectRefused(() => decideJob(jobIn('running'), { type: 'record_fact', key, value }), 'INTERNAL_ERROR');
      }
    });

    it('are checked again where events are stored: the schema refuses a fact the decider would', () => {
      const schema = JOB_EVENT_SCHEMAS.JobFactRecorded;
      expect(schema.safeParse({ attempt: 1, key: 'proxmox.clone', value: clone }).success).toBe(true);
      expect(schema.safeParse({ attempt: 1, key: 'proxmox.token', value: 'x' }).success).toBe(false);
      expect(schema.safeParse({ attempt: 1, key: 'proxmox.clone', value: 'x'.repeat(2000) }).success).toBe(false);
    });

    it('holds at most 32 keys', () => {
      let job = jobIn('running');
      for (let i = 0; i < 32; i++) job = run(job, { type: 'record_fact', key: `k${i}`, value: i });
      expectRefused(() => decideJob(job, { type: 'record_fact', key: 'k32', value: 1 }), 'INTERNAL_ERROR');
      expect(decideJob(job, { type: 'record_fact', key: 'k0', value: 'changed' })).toHaveLength(1);
    });
  });
});
