import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  conflict,
  decideJob,
  EventContext,
  internalError,
  JobCommand,
  JobEvent,
  JobRecoveryAction,
  JobState,
  notFound,
} from '@hcp/domain';
import { HcpConfig } from '../../config/hcp-config';
import { Loaded } from '../../platform/event-sourcing/aggregate-repository';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { HCP_CONFIG } from '../../platform/tokens';
import { JobRepository } from '../job.repository';
import { JobView, presentJob } from '../job.presenter';
import { JobQueue } from '../queue/job-queue';
import { JobExecutors } from '../worker/job-executors';

/**
 * What ops can do with a stuck or failed job (`POST /v1/ops/jobs/{id}/recover`). The job's row is held
 * as a worker holds it, so a recovery never races a live worker: while one's lease runs, CONFLICT.
 *
 * - retry: the job waits again, due now, with a fresh attempt budget and deadline; a failed job only if
 *   its resource takes the operation again (its executor's `reopen`, else CONFLICT).
 * - mark-failed: an unfinished job fails with INTERNAL_ERROR carrying the reason; its resource settles as
 *   for any failed job (the executor's `recordFailure`).
 *
 * The JobRecovered event carries the ops actor; the audit projection records it as `job.recover`.
 */
@Injectable()
export class JobRecovery {
  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly executors: JobExecutors,
    private readonly metrics: HcpMetrics,
    @Inject(HCP_CONFIG) private readonly config: Pick<HcpConfig, 'jobs'>,
  ) {}

  async recover(jobId: string, action: JobRecoveryAction, reason: string, context: EventContext): Promise<JobView> {
    const before = await this.jobs.load(jobId);
    if (!before.state) throw notFound('job');
    const command = (): JobCommand => ({
      type: 'recover',
      action,
      reason,
      deadline: this.jobs.deadlineFrom(new Date()),
    });
    decideJob(before.state, command()); // refuses (409, 400) before anything is touched

    const holder = `ops-recovery:${randomUUID()}`;
    const { id, project_id, type, resource_id } = before.state;
    if (!(await this.queue.hold({ job_id: id, project_id, type, resource_id }, holder, this.config.jobs.leaseMs)))
      throw conflict('a worker is running this job now; try again when its attempt ends', { job_id: id });

    let job: Loaded<JobState> = await this.jobs.load(jobId); // as it is now that no worker can move it
    try {
      const state = job.state!;
      const events = decideJob(state, command());
      const executor = this.executors.for(state.type);
      if (action === 'retry' && state.status === 'failed') {
        if (!executor) throw conflict(`no executor runs ${state.type} jobs`);
        await executor.reopen(state, context);
      }
      if (action === 'mark-failed') await executor?.recordFailure(state, failureOf(events));
      job = await this.jobs.append(job, events, context);
    } catch (err) {
      await this.giveBack(job.state!, holder);
      throw err;
    }
    const after = job.state!;
    if (after.status === 'failed') {
      await this.queue.complete(jobId, holder);
      this.metrics.jobsFinished.inc({ type: after.type, provider: 'none', outcome: after.error?.code ?? 'failed' });
    } else {
      await this.queue.release(jobId, holder);
    }
    return presentJob(after);
  }

  /** A refused recovery leaves the row as the job's state has it: finished, or due for a worker. */
  private async giveBack(state: JobState, holder: string): Promise<void> {
    if (state.status === 'succeeded' || state.status === 'failed') await this.queue.complete(state.id, holder);
    else await this.queue.release(state.id, holder);
  }
}

function failureOf(events: JobEvent[]) {
  const failed = events.find((e) => e.type === 'JobFailed');
  if (failed?.type !== 'JobFailed') throw internalError('mark-failed decided without a JobFailed');
  return failed.data.error;
}
