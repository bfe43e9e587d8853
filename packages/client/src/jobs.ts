import type { HcpClient } from './client';
import { unwrap } from './client';
import { HcpApiError, HcpTimeoutError } from './errors';
import type { Job } from './types';

export interface WaitForJobOptions {
  /** Give up (HcpTimeoutError, code TIMEOUT) when the job is still unfinished after this long. Default 10 min. */
  timeoutMs?: number;
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** First pause between two reads of the job; it doubles up to maxDelayMs. Default 250 ms. */
  initialDelayMs?: number;
  /** Longest pause between two reads, unless the server asks for longer (Retry-After). Default 5 s. */
  maxDelayMs?: number;
  /**
   * How long a 404 is read as "not there yet" (jobs are read from a read model that follows the 202 by a
   * moment) while the job has not been seen. Default 30 s; 0 rejects at the first 404.
   */
  notFoundGraceMs?: number;
  /** Called with the job when first read and whenever it changed since the previous read. */
  onProgress?: (job: Job) => void;
}

const FINISHED: ReadonlySet<Job['status']> = new Set(['succeeded', 'failed']);
// Answers that say "not now" rather than "no": wait and read again.
const TRANSIENT_STATUS = new Set([0, 429, 502, 503, 504]);

/**
 * Reads a job until it has finished, and answers it: succeeded or failed, the caller decides what a
 * failure means. Pauses grow exponentially with jitter; a 429 or 503 answer's Retry-After is honoured;
 * an unreachable server or a 502/504 is retried like a pause, and so is a 404 until the job has been seen
 * or notFoundGraceMs has passed. Any other error answer (401, 403, ...) rejects at once with its HcpApiError.
 */
export async function waitForJob(
  client: HcpClient,
  projectId: string,
  jobId: string,
  opts: WaitForJobOptions = {},
): Promise<Job> {
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const initialDelayMs = opts.initialDelayMs ?? 250;
  const maxDelayMs = Math.max(opts.maxDelayMs ?? 5_000, initialDelayMs);
  const started = Date.now();
  const deadline = started + timeoutMs;
  const notFoundGraceMs = opts.notFoundGraceMs ?? 30_000;
  const stop = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop.abort();
  }, timeoutMs);
  const forwardAbort = () => stop.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', forwardAbort, { once: true });
  let last: Job | undefined;
  let lastSeen: string | undefined;
  const timeout = () =>
    new HcpTimeoutError(
      `job ${jobId} unfinished after ${timeoutMs} ms${last ? ` (last seen ${last.status})` : ''}`,
      last,
    );
  try {
    for (let attempt = 0; ; attempt++) {
      opts.signal?.throwIfAborted();
      let pauseMs = backoff(attempt, initialDelayMs, maxDelayMs);
      try {
        const job = unwrap(await readJob(client, projectId, jobId, stop.signal));
        const seen = JSON.stringify(job);
        if (seen !== lastSeen) {
          lastSeen = seen;
          last = job;
          opts.onProgress?.(job);
        }
        if (FINISHED.has(job.status)) return job;
      } catch (err) {
        if (timedOut) throw timeout();
        opts.signal?.throwIfAborted();
        if (!(err instanceof HcpApiError)) throw err;
        const notYetThere = err.status === 404 && last === undefined && Date.now() - started < notFoundGraceMs;
        if (!TRANSIENT_STATUS.has(err.status) && !notYetThere) throw err;
        if (err.retryAfterS !== undefined) pauseMs = err.retryAfterS * 1000;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw timeout();
      await pause(Math.min(pauseMs, left), stop.signal).catch(() => {
        if (timedOut) throw timeout();
        opts.signal?.throwIfAborted();
      });
    }
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', forwardAbort);
  }
}

// One signal per read: fetch leaves a listener on the signal it is given for as long as that signal
// lives, so handing it the wait's own signal would pile up one per read.
async function readJob(client: HcpClient, projectId: string, jobId: string, stop: AbortSignal) {
  const read = new AbortController();
  const onStop = () => read.abort(stop.reason);
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  try {
    return await client.GET('/v1/projects/{project_id}/jobs/{job_id}', {
      params: { path: { project_id: projectId, job_id: jobId } },
      signal: read.signal,
    });
  } finally {
    stop.removeEventListener('abort', onStop);
  }
}

/** Exponential backoff with "equal jitter": half the step fixed, half random, so pollers spread out. */
function backoff(attempt: number, initialMs: number, maxMs: number): number {
  const step = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return step / 2 + Math.random() * (step / 2);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
