import { EventContext, JobQueued } from '@hcp/domain';
import { JobAdmission, JobOpening, JobRepository } from '../../src/jobs';

/** One job a FakeJobAdmission was asked to admit. */
export interface AdmittedJob {
  queued: JobQueued;
  context: EventContext;
}

/**
 * JobAdmission without its queue row: records every job it is asked to admit and, when given the real
 * JobRepository, opens the job's stream with its JobQueued as the real one does. `failNext` makes the
 * next admission throw before anything is written (the queue's database went away).
 */
export class FakeJobAdmission implements Pick<JobAdmission, 'admit' | 'opening' | 'opened'> {
  readonly admitted: AdmittedJob[] = [];
  private readonly failures: unknown[] = [];

  constructor(private readonly jobs?: Pick<JobRepository, 'ensureQueued' | 'opening'>) {}

  failNext(error: unknown): this {
    this.failures.push(error);
    return this;
  }

  async admit(queued: JobQueued, context: EventContext): Promise<void> {
    if (this.failures.length) throw this.failures.shift();
    this.admitted.push({ queued, context });
    await this.jobs?.ensureQueued(queued, context);
  }

  /**
   * As the real one on a store without SQL writes: the JobQueued commits with the caller's events (when
   * given the JobRepository), and `opened` counts as the admission (`failNext` strikes there).
   */
  opening(queued: JobQueued, context: EventContext): JobOpening {
    return {
      queued,
      context,
      rowCommitted: false,
      writes: { appends: this.jobs ? [this.jobs.opening(queued, context)] : [], sqlWrites: [] },
    };
  }

  async opened(opening: JobOpening): Promise<void> {
    if (this.failures.length) throw this.failures.shift();
    this.admitted.push({ queued: opening.queued, context: opening.context });
  }

  /** The JobQueued of every admission, in order. */
  queued(): JobQueued[] {
    return this.admitted.map((a) => a.queued);
  }
}
