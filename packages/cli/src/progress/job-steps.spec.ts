import type { Job } from '@hcp/client';
import { finalLine, statusLine, stepsBetween } from './job-steps';

const base: Job = {
  id: 'j-1',
  project_id: 'p',
  type: 'vm.create',
  status: 'queued',
  resource_id: 'vm-1',
  attempts: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  started_at: null,
  finished_at: null,
  error: null,
  trace_id: 't',
  deadline: '2026-01-01T00:10:00.000Z',
};
const job = (patch: Partial<Job>): Job => ({ ...base, ...patch });
const unavailable = { code: 'PROVIDER_UNAVAILABLE' as const, message: 'down', retryable: true };

describe('job steps', () => {
  it('reports queued, each attempt started, each failed attempt that will be retried, and VM status changes', () => {
    const seen = [
      { job: job({}) },
      { job: job({ status: 'running', attempts: 1 }), vmStatus: 'provisioning' },
      { job: job({ status: 'queued', attempts: 1, error: unavailable }), vmStatus: 'provisioning' },
      { job: job({ status: 'running', attempts: 2, error: unavailable }), vmStatus: 'provisioning' },
      { job: job({ status: 'succeeded', attempts: 2 }), vmStatus: 'running' },
    ];
    const steps = seen.flatMap((s, i) => stepsBetween(seen[i - 1], s));
    expect(steps).toEqual([
      'queued at 2026-01-01T00:00:00.000Z',
      'attempt 1 started',
      'vm provisioning',
      'attempt 1 failed: PROVIDER_UNAVAILABLE down (retrying)',
      'attempt 2 started',
      'vm provisioning → running',
    ]);
  });

  it('reports nothing when nothing changed between two reads', () => {
    const s = { job: job({ status: 'running', attempts: 1 }), vmStatus: 'provisioning' };
    expect(stepsBetween(s, { ...s })).toEqual([]);
  });

  it('says in the status line what the job and its VM are doing, and for how long', () => {
    expect(statusLine({ job: job({ status: 'running', attempts: 2 }), vmStatus: 'provisioning' }, 'j-1', 4_200)).toBe(
      'vm.create running · attempt 2 · vm provisioning · 4.2s',
    );
    expect(statusLine(undefined, 'j-1', 100)).toBe('job j-1: waiting for its first answer · 0.1s');
  });

  it("ends with a line giving the outcome, the job's own duration and the resource", () => {
    const finished = { finished_at: '2026-01-01T00:00:04.200Z', attempts: 1 };
    expect(finalLine({ job: job({ ...finished, status: 'succeeded' }), vmStatus: 'running' })).toBe(
      '✔ vm.create succeeded in 4.2s — vm vm-1 running',
    );
    expect(finalLine({ job: job({ ...finished, status: 'failed', attempts: 3, error: unavailable }) })).toBe(
      '✖ vm.create failed after 3 attempts in 4.2s: PROVIDER_UNAVAILABLE down — vm vm-1',
    );
  });
});
