import { Inject, Injectable } from '@nestjs/common';
import {
  conflict,
  decideOrphan,
  EventContext,
  ORPHAN_OPS_PROJECT,
  OrphanDestroyRequested,
  OrphanDestroyRequester,
} from '@hcp/domain';
import { idsFor, RequestContext } from '../../http/request/request-context';
import { JobAccepted, JobAdmission, JobRepository } from '../../jobs';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { orphanDestroyJob } from '../jobs/orphan-destroy-job';
import { OrphanRepository } from '../orphan.repository';

/**
 * Opens the destroy job of an orphan: OrphanDestroyRequested on its stream, then the job. Ops ask through
 * the API (an Idempotency-Key gives the same job again); HCP asks by itself under HCP_ORPHAN_POLICY=destroy.
 */
@Injectable()
export class OrphanDestroyer {
  constructor(
    private readonly orphans: OrphanRepository,
    @Inject(JobAdmission) private readonly admission: Pick<JobAdmission, 'admit'>,
    @Inject(JobRepository) private readonly jobs: Pick<JobRepository, 'load'>,
  ) {}

  async request(orphanId: string, ctx: RequestContext, requestedBy: OrphanDestroyRequester): Promise<JobAccepted> {
    // Ops keys have no project: they share the ops scope the idempotency layer keeps them in.
    const jobId = idsFor(ctx, ORPHAN_OPS_PROJECT, 'job');
    const { state: job } = await this.jobs.load(jobId);
    if (job) {
      if (job.resource_id !== orphanId)
        throw conflict('this idempotency key was used for a request on another resource');
      return { resource_id: orphanId, job_id: jobId };
    }
    return this.requestAs(orphanId, jobId, eventContext(ctx.actor, ctx.traceId), requestedBy);
  }

  private async requestAs(
    orphanId: string,
    jobId: string,
    context: EventContext,
    requestedBy: OrphanDestroyRequester,
  ): Promise<JobAccepted> {
    const { events } = await this.orphans.update(
      orphanId,
      (orphan) => decideOrphan(orphan, { type: 'destroy', job_id: jobId, requested_by: requestedBy }),
      context,
    );
    const requested = events.find((e): e is OrphanDestroyRequested => e.type === 'OrphanDestroyRequested');
    if (requested) await this.admission.admit(orphanDestroyJob(requested, orphanId, context), context);
    return { resource_id: orphanId, job_id: jobId };
  }
}
