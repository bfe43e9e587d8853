import type { Job } from '@hcp/client';
import { formatDuration } from '../duration';

/** What the display knows at one moment: the job as last read, and its VM's status when it has one. */
export interface JobSnapshot {
  job: Job;
  vmStatus?: string;
}

/**
 * The steps a job recorded between two reads, as lines: queued, each attempt started, each attempt
 * that failed and will be retried, and the VM's status changes. The job answer shows its current state
 * only, so an attempt that started and failed between two reads appears as its failure alone.
 */
export function stepsBetween(previous: JobSnapshot | undefined, next: JobSnapshot): string[] {
  const steps: string[] = [];
  const { job } = next;
  const before = previous?.job;
  if (!before && job.status === 'queued') steps.push(`queued at ${job.created_at}`);
  const newAttempt =
    job.attempts > (before?.attempts ?? 0) || (before?.status !== 'running' && job.status === 'running');
  if (before && before.status === 'running' && job.status === 'queued' && job.error)
    steps.push(`attempt ${before.attempts} failed: ${job.error.code} ${job.error.message} (retrying)`);
  if (newAttempt && job.status === 'running') steps.push(`attempt ${job.attempts} started`);
  if (next.vmStatus && next.vmStatus !== previous?.vmStatus)
    steps.push(previous?.vmStatus ? `vm ${previous.vmStatus} → ${next.vmStatus}` : `vm ${next.vmStatus}`);
  return steps;
}

/** The status line redrawn in place: job type, status, attempt, VM status, time spent waiting. */
export function statusLine(snapshot: JobSnapshot | undefined, jobId: string, elapsedMs: number): string {
  if (!snapshot) return `job ${jobId}: waiting for its first answer · ${formatDuration(elapsedMs)}`;
  const { job, vmStatus } = snapshot;
  const parts = [`${job.type} ${job.status}`];
  if (job.attempts > 0) parts.push(`attempt ${job.attempts}`);
  if (vmStatus) parts.push(`vm ${vmStatus}`);
  parts.push(formatDuration(elapsedMs));
  return parts.join(' · ');
}

/** The line that ends a wait: what happened and how long the job took (HCP's own clock). */
export function finalLine(snapshot: JobSnapshot): string {
  const { job, vmStatus } = snapshot;
  const took = job.finished_at ? Date.parse(job.finished_at) - Date.parse(job.created_at) : Number.NaN;
  const duration = Number.isFinite(took) ? ` in ${formatDuration(took)}` : '';
  const resource = job.type.startsWith('vm.') ? `vm ${job.resource_id}` : job.resource_id;
  if (job.status === 'succeeded')
    return `✔ ${job.type} succeeded${duration} — ${resource}${vmStatus ? ` ${vmStatus}` : ''}`;
  const attempts = job.attempts === 1 ? '1 attempt' : `${job.attempts} attempts`;
  const error = job.error ? `${job.error.code} ${job.error.message}` : 'no error recorded';
  return `✖ ${job.type} failed after ${attempts}${duration}: ${error} — ${resource}${vmStatus ? ` ${vmStatus}` : ''}`;
}
