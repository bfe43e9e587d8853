import { HcpApiError, type HcpClient, type Job, unwrap, waitForJob } from '@hcp/client';
import { formatDuration } from '../duration';
import { describeError, EXIT, OutcomeError } from '../exit-codes';
import { createJobDisplay, DisplayStream } from './job-display';
import { finalLine, JobSnapshot } from './job-steps';

export interface WatchOptions {
  timeoutMs: number;
  /** Where the live display and its final line go (stderr, so stdout stays the command's answer). */
  display: DisplayStream;
  /** The VM poll's interval; the job's own reads back off from 250 ms to 1 s. */
  vmPollMs?: number;
  /**
   * How long a job HCP just accepted may answer 404: the job list is a read model, a moment behind the
   * 202. Zero (jobs watch) makes an unknown job a refusal at once.
   */
  appearWithinMs?: number;
}

/**
 * Waits for a job with a live display, and answers the finished job when it succeeded. A failed job
 * throws OutcomeError(JOB_FAILED), a wait past the timeout OutcomeError(TIMED_OUT), Ctrl-C
 * OutcomeError(INTERRUPTED); each after its final line. The job itself goes on in HCP in the last two cases.
 */
export async function watchJob(client: HcpClient, project: string, jobId: string, opts: WatchOptions): Promise<Job> {
  const display = createJobDisplay(opts.display, jobId);
  const started = Date.now();
  const stop = new AbortController();
  let snapshot: JobSnapshot | undefined;
  let vmStatus: string | undefined;
  const show = (job: Job) => {
    snapshot = { job, vmStatus };
    display.update(snapshot);
  };
  const vmPoll = pollVmStatus(
    client,
    project,
    () => snapshot?.job,
    opts.vmPollMs ?? 1_000,
    stop.signal,
    (status) => {
      vmStatus = status;
      if (snapshot) show(snapshot.job);
    },
  );
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    stop.abort();
  };
  process.once('SIGINT', onSigint);
  try {
    const job = await waitForJob(client, project, jobId, {
      timeoutMs: opts.timeoutMs,
      notFoundGraceMs: opts.appearWithinMs ?? 0,
      signal: stop.signal,
      maxDelayMs: 1_000,
      onProgress: show,
    });
    stop.abort();
    await vmPoll;
    vmStatus = await readVmStatus(client, project, job).catch(() => vmStatus);
    const final = { job, vmStatus };
    display.update(final);
    display.finish(finalLine(final));
    if (job.status === 'failed') throw new OutcomeError(EXIT.JOB_FAILED, finalLine(final));
    return job;
  } catch (err) {
    stop.abort();
    await vmPoll;
    if (err instanceof OutcomeError) throw err;
    const waited = formatDuration(Date.now() - started);
    const what = snapshot ? `${snapshot.job.type} (${snapshot.job.status})` : `job ${jobId}`;
    if (interrupted) {
      display.finish(`■ stopped watching ${what} after ${waited}; it goes on in HCP: hcp jobs watch ${jobId}`);
      throw new OutcomeError(EXIT.INTERRUPTED, 'interrupted');
    }
    if (err instanceof HcpApiError && err.code === 'TIMEOUT') {
      const line = `✖ timed out after ${waited} waiting for ${what}; it goes on in HCP: hcp jobs watch ${jobId}`;
      display.finish(line);
      throw new OutcomeError(EXIT.TIMED_OUT, line);
    }
    display.finish(`✖ stopped waiting for ${what}: ${describeError(err)}`);
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

async function pollVmStatus(
  client: HcpClient,
  project: string,
  job: () => Job | undefined,
  intervalMs: number,
  signal: AbortSignal,
  onChange: (status: string) => void,
): Promise<void> {
  let last: string | undefined;
  while (!signal.aborted) {
    const current = job();
    if (current) {
      // A read that fails (a deleted VM, a blip) shows nothing new; the job's own answer decides.
      const status = await readVmStatus(client, project, current, signal).catch(() => undefined);
      if (status && status !== last && !signal.aborted) {
        last = status;
        onChange(status);
      }
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, intervalMs);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}

async function readVmStatus(client: HcpClient, project: string, job: Job, signal?: AbortSignal) {
  if (!job.type.startsWith('vm.')) return undefined;
  const vm = unwrap(
    await client.GET('/v1/projects/{project_id}/vms/{vm_id}', {
      params: { path: { project_id: project, vm_id: job.resource_id } },
      signal,
    }),
  );
  return vm.status;
}
