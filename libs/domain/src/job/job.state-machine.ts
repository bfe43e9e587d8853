import { conflict, HcpErrorShape } from '../errors';
import { JobEvent, JobQueued, JobType, jobEvent } from './job.events';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobState {
  id: string;
  project_id: string;
  type: JobType;
  resource_id: string;
  status: JobStatus;
  attempts: number;
  params: Record<string, unknown>;
  trace_id: string;
  actor: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  retry_at: string | null;
  error: HcpErrorShape | null;
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
    error: null,
  };
}

export function foldJob(events: ReadonlyArray<{ event: JobEvent; at: string }>): JobState | null {
  return events.reduce<JobState | null>((state, { event, at }) => evolveJob(state, event, at), null);
}

export type JobCommand =
  | { type: 'start'; worker: string }
  | { type: 'succeed' }
  | { type: 'fail_attempt'; error: HcpErrorShape; retry_at: string }
  | { type: 'fail'; error: HcpErrorShape };

export function decideJob(state: JobState | null, command: JobCommand): JobEvent[] {
  if (!state) throw conflict('job has not been queued');
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
  }
}

function requireRunning(state: JobState, verb: string): void {
  if (state.status !== 'running')
    throw conflict(`cannot ${verb} a job that is ${state.status}`, { status: state.status });
}
