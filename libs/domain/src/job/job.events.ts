import { HcpErrorShape } from '../errors';
import { DomainEvent } from '../events/domain-event';
import type { JobFactValue } from './job-facts';

export const JOB_TYPES = [
  'vm.create',
  'vm.start',
  'vm.stop',
  'vm.reboot',
  'vm.delete',
  /** Ops asked to compare a VM with its provider now (no transition of the VM's own). */
  'vm.reconcile',
  /** Ops asked to remove a provider resource that carries an HCP id but has no live VM. */
  'orphan.destroy',
] as const;
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
    /**
     * When the job fails with PROVIDER_TIMEOUT if it has not finished (RFC 3339), stamped when the job is
     * opened so a restart or a changed setting never moves it. Null (or absent) only in v1 events (jobs
     * queued before deadlines existed): their deadline is the queued time plus DEFAULT_JOB_DEADLINE_MS.
     */
    deadline?: string | null;
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
/**
 * The worker running an attempt gave it back unfinished (it is stopping): the job waits again, due at
 * once, and the attempt does not count, so the next JobStarted carries the same attempt number.
 */
export type JobAttemptReleased = DomainEvent<
  'JobAttemptReleased',
  { attempt: number; worker: string; reason: 'worker_stopping' }
>;
/**
 * Ops acted on a stuck or failed job. `retry`: the job waits again, due now, with a fresh attempt budget
 * and a new `deadline`. `mark-failed`: followed by the JobFailed that carries the error.
 */
export type JobRecovered = DomainEvent<
  'JobRecovered',
  {
    action: JobRecoveryAction;
    reason: string;
    previous_status: 'queued' | 'running' | 'succeeded' | 'failed';
    deadline: string | null;
  }
>;
/**
 * An attempt wrote down a fact before acting on the provider (see job-facts.ts): the latest value per
 * key is in the job's state for every later attempt. Internal: never in the job answer or the audit.
 */
export type JobFactRecorded = DomainEvent<'JobFactRecorded', { attempt: number; key: string; value: JobFactValue }>;
export const JOB_RECOVERY_ACTIONS = ['retry', 'mark-failed'] as const;
export type JobRecoveryAction = (typeof JOB_RECOVERY_ACTIONS)[number];
/** Longest reason ops may give for a recovery; it is stored in the event and the audit record. */
export const JOB_RECOVERY_REASON_MAX = 500;

export type JobEvent =
  | JobQueued
  | JobStarted
  | JobAttemptFailed
  | JobSucceeded
  | JobFailed
  | JobAttemptReleased
  | JobRecovered
  | JobFactRecorded;
export type JobEventType = JobEvent['type'];

export const JOB_EVENT_VERSIONS: Record<JobEventType, number> = {
  JobQueued: 2,
  JobStarted: 1,
  JobAttemptFailed: 1,
  JobSucceeded: 1,
  JobFailed: 1,
  JobAttemptReleased: 1,
  JobRecovered: 1,
  JobFactRecorded: 1,
};

/** How long a job may take from being queued, for jobs that did not record their deadline (JobQueued v1). */
export const DEFAULT_JOB_DEADLINE_MS = 30 * 60_000;

/** JobQueued v1 had no deadline: null, so the state derives it from the queued time (see evolveJob). */
export function upcastJobQueuedV1(data: Record<string, unknown>): Record<string, unknown> {
  return { ...data, deadline: null };
}

export const jobStreamId = (jobId: string) => `job-${jobId}`;
export const JOB_STREAM_PREFIX = 'job-';

export function jobEvent<T extends JobEvent>(type: T['type'], data: T['data']): T {
  return { type, version: JOB_EVENT_VERSIONS[type], data } as T;
}
