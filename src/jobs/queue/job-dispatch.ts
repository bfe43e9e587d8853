import { EntityManager } from 'typeorm';
import { EventContext, JobQueued } from '@hcp/domain';
import { JobRepository } from '../job.repository';
import { JobQueue, queuedJobOf } from './job-queue';

/** A job a context's request event stands for, with the context it is recorded under. */
export interface DispatchedJob {
  queued: JobQueued;
  ctx: EventContext;
}

/** The context a job derived from a stored request event is recorded under (the request's own). */
export function dispatchContextOf(context: Partial<EventContext>): EventContext {
  return {
    actor: context.actor ?? 'unknown',
    trace_id: context.trace_id ?? 'unknown',
    occurred_at: context.occurred_at ?? new Date().toISOString(),
  };
}

/**
 * The job dispatchers' half of JobAdmission, inside a projection's transaction: jobs the command
 * admitted in full (event, then row) need nothing more; for the others the JobQueued event is ensured
 * (idempotent: its event id is the job id) and the queue row inserted with the projection's checkpoint.
 */
export async function queueMissingJobs(
  jobs: JobRepository,
  queue: JobQueue,
  tx: EntityManager,
  requested: DispatchedJob[],
): Promise<void> {
  if (requested.length === 0) return;
  const admitted = await queue.existing(
    tx,
    requested.map((r) => r.queued.data.job_id),
  );
  const missing = requested.filter((r) => !admitted.has(r.queued.data.job_id));
  for (const { queued, ctx } of missing) await jobs.ensureQueued(queued, ctx);
  await queue.enqueue(
    tx,
    missing.map((r) => queuedJobOf(r.queued)),
  );
}
