import { conflict, HcpError, HcpErrorShape, invalidRequest } from '../errors';
import {
  DEFAULT_JOB_DEADLINE_MS,
  JOB_RECOVERY_REASON_MAX,
  JobEvent,
  JobQueued,
  JobRecoveryAction,
  JobType,
  jobEvent,
} from './job.events';
import { checkJobFact, JOB_FACTS_MAX, sameJobFact } from './job-facts';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobState {
  id: string;
  project_id: string;
  type: JobType;
  resource_id: string;
  status: JobStatus;
  /** Attempts that counted: a released attempt (its worker stopped) is taken back. */
  attempts: number;
  params: Record<string, unknown>;
  trace_id: string;
  actor: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  retry_at: string | null;
  /** After this the job fails with PROVIDER_TIMEOUT instead of running (again). */
  deadline: string;
  error: HcpErrorShape | null;
  /**
   * The latest value of each fact attempts recorded (JobFactRecorded): provider handles a retried
   * attempt needs (CallContext.recorded). Absent until the first; internal, never in the job answer.
   */
  facts?: Readonly<Record<string, unknown>>;
}

export function evolveJob(state: JobState | null, event: JobEvent, at: string): JobState | null {
  if (event.type === 'JobQueued') return queuedState(event.data, at);
  if (!state) return null;
  switch (event.type) {
    case 'JobStarted':
      return {
        ...state,
        status: 'running',
        attempts: event.data.attempt,
        started_at: state.started_at ?? at,
        retry_at: null,
      };
    case 'JobAttemptFailed':
      return { ...state, status: 'queued', error: event.data.error, retry_at: event.data.retry_at };
    case 'JobAttemptReleased':
      return { ...state, status: 'queued', attempts: event.data.attempt - 1, retry_at: null };
    case 'JobRecovered':
      if (event.data.action === 'mark-failed') return state; // the JobFailed that follows settles it
      return {
        ...state,
        status: 'queued',
        attempts: 0,
        finished_at: null,
        retry_at: null,
        deadline: event.data.deadline ?? state.deadline,
      };
    case 'JobFactRecorded':
      return { ...state, facts: { ...state.facts, [event.data.key]: event.data.value } };
    case 'JobSucceeded':
      return { ...state, status: 'succeeded', finished_at: at, error: null, retry_at: null };
    case 'JobFailed':
      return { ...state, status: 'failed', finished_at: at, error: event.data.error, retry_at: null };
  }
}

function queuedState(data: JobQueued['data'], at: string): JobState {
  return {
    id: data.job_id,
    project_id: data.project_id,
    type: data.type,
    resource_id: data.resource_id,
    status: 'queued',
    attempts: 0,
    params: data.params,
    trace_id: data.trace_id,
    actor: data.actor,
    created_at: at,
    started_at: null,
    finished_at: null,
    retry_at: null,
    deadline: data.deadline ?? new Date(Date.parse(at) + DEFAULT_JOB_DEADLINE_MS).toISOString(),
    error: null,
  };
}

export function foldJob(events: ReadonlyArray<{ event: JobEvent; at: string }>): JobState | null {
  return events.reduce<JobState | null>((state, { event, at }) => evolveJob(state, event, at), null);
}

/** Whether the job's deadline has passed at `now`: it may not run (again), only fail. */
export function jobDeadlinePassed(state: JobState, now: Date): boolean {
  return now.getTime() >= Date.parse(state.deadline);
}

/** The error of a job that ran out of time; `last` is the error of its last attempt, if any. */
export function jobDeadlineError(state: JobState, last: HcpErrorShape | null = state.error): HcpErrorShape {
  // Not retryable: no attempt may start past the deadline, whoever asks.
  return new HcpError(
    'PROVIDER_TIMEOUT',
    `the job did not finish by its deadline (${state.deadline})`,
    { deadline: state.deadline, ...(last ? { last_error: { code: last.code, message: last.message } } : {}) },
    false,
  ).toShape();
}

export type JobCommand =
  | { type: 'start'; worker: string }
  | { type: 'succeed' }
  | { type: 'fail_attempt'; error: HcpErrorShape; retry_at: string }
  | { type: 'fail'; error: HcpErrorShape }
  | { type: 'release'; worker: string }
  /** Idempotent: a key that holds this value already records nothing. */
  | { type: 'record_fact'; key: string; value: unknown }
  | { type: 'recover'; action: JobRecoveryAction; reason: string; deadline: string };

export function decideJob(state: JobState | null, command: JobCommand): JobEvent[] {
  if (!state) throw conflict('job has not been queued');
  if (command.type === 'recover') return decideRecovery(state, command);
  if (state.status === 'succeeded' || state.status === 'failed') {
    throw conflict(`job is already ${state.status}`, { status: state.status });
  }
  switch (command.type) {
    case 'start':
      if (state.status !== 'queued') throw conflict('job is already running', { status: state.status });
      return [jobEvent('JobStarted', { attempt: state.attempts + 1, worker: command.worker })];
    case 'succeed':
      requireRunning(state, 'succeed');
      return [jobEvent('JobSucceeded', { attempt: state.attempts })];
    case 'fail_attempt':
      requireRunning(state, 'fail an attempt of');
      return [
        jobEvent('JobAttemptFailed', { attempt: state.attempts, error: command.error, retry_at: command.retry_at }),
      ];
    case 'fail':
      // A queued job may fail too: its lease expired more often than the retry limit allows.
      return [jobEvent('JobFailed', { attempt: state.attempts, error: command.error })];
    case 'record_fact': {
      requireRunning(state, 'record a fact of');
      checkJobFact(command.key, command.value);
      const facts = state.facts ?? {};
      const known = Object.hasOwn(facts, command.key);
      if (known && sameJobFact(facts[command.key], command.value)) return [];
      if (!known && Object.keys(facts).length >= JOB_FACTS_MAX)
        throw new HcpError('INTERNAL_ERROR', `a job holds at most ${JOB_FACTS_MAX} facts`, undefined, false);
      return [jobEvent('JobFactRecorded', { attempt: state.attempts, key: command.key, value: command.value })];
    }
    case 'release':
      requireRunning(state, 'give back');
      return [
        jobEvent('JobAttemptReleased', { attempt: state.attempts, worker: command.worker, reason: 'worker_stopping' }),
      ];
  }
}

/**
 * Ops retry any job but a succeeded one (whether the resource can take a failed job's operation again
 * is its executor's call, asked before this), and mark failed only a job that has not finished.
 */
function decideRecovery(state: JobState, command: Extract<JobCommand, { type: 'recover' }>): JobEvent[] {
  const reason = command.reason.trim();
  if (reason.length === 0 || reason.length > JOB_RECOVERY_REASON_MAX)
    throw invalidRequest(`reason must be 1 to ${JOB_RECOVERY_REASON_MAX} characters`);
  if (state.status === 'succeeded' || (command.action === 'mark-failed' && state.status === 'failed'))
    throw conflict(`job is already ${state.status}; there is nothing to ${command.action}`, { status: state.status });
  const recovered = jobEvent('JobRecovered', {
    action: command.action,
    reason,
    previous_status: state.status,
    deadline: command.action === 'retry' ? command.deadline : null,
  });
  if (command.action === 'retry') return [recovered];
  const error = new HcpError('INTERNAL_ERROR', `marked failed by ops: ${reason}`, { recovered_by_ops: true }).toShape();
  return [recovered, jobEvent('JobFailed', { attempt: state.attempts, error })];
}

function requireRunning(state: JobState, verb: string): void {
  if (state.status !== 'running')
    throw conflict(`cannot ${verb} a job that is ${state.status}`, { status: state.status });
}
