import { HcpErrorShape } from '../errors';
import { DomainEvent } from '../events/domain-event';

export const JOB_TYPES = ['vm.create', 'vm.start', 'vm.stop', 'vm.reboot', 'vm.delete'] as const;
export type JobType = (typeof JOB_TYPES)[number];

export type JobQueued = DomainEvent<
  'JobQueued',
  {
    job_id: string;
    project_id: string;
    type: JobType;
    resource_id: string;
    trace_id: string;
    actor: string;
    /** Operation parameters the worker needs (e.g. `force`), never secrets. */
    params: Record<string, unknown>;
  }
>;
export type JobStarted = DomainEvent<'JobStarted', { attempt: number; worker: string }>;
/** One attempt failed (error, or its lease expired); the job waits for `retry_at` and runs again. */
export type JobAttemptFailed = DomainEvent<
  'JobAttemptFailed',
  { attempt: number; error: HcpErrorShape; retry_at: string }
>;
export type JobSucceeded = DomainEvent<'JobSucceeded', { attempt: number }>;
export type JobFailed = DomainEvent<'JobFailed', { attempt: number; error: HcpErrorShape }>;

export type JobEvent = JobQueued | JobStarted | JobAttemptFailed | JobSucceeded | JobFailed;
export type JobEventType = JobEvent['type'];

export const JOB_EVENT_VERSIONS: Record<JobEventType, number> = {
  JobQueued: 1,
  JobStarted: 1,
  JobAttemptFailed: 1,
  JobSucceeded: 1,
  JobFailed: 1,
};

export const jobStreamId = (jobId: string) => `job-${jobId}`;
export const JOB_STREAM_PREFIX = 'job-';

export function jobEvent<T extends JobEvent>(type: T['type'], data: T['data']): T {
  return { type, version: JOB_EVENT_VERSIONS[type], data } as T;
}
