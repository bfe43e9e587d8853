import { EventContext, HcpError, HcpErrorShape, JobState } from '@hcp/domain';
import { EventStore, WrongExpectedRevisionError } from '@hcp/eventstore';
import { JobAttempt, JobExecutor, JobWork } from '../../src/jobs';

/** What a ScriptedJobExecutor was asked to do, in order. */
export type ScriptedExecutorCall =
  | { call: 'perform'; job: JobState; attempt: JobAttempt }
  | { call: 'record'; job_id: string }
  | { call: 'recordFailure'; job: JobState; error: HcpErrorShape }
  | { call: 'reopen'; job: JobState; actor: string };

/** One scripted answer of `perform`: the work, or a function of the job and attempt that returns it. */
export type ScriptedWork = JobWork | ((job: JobState, attempt: JobAttempt) => JobWork | Promise<JobWork>);

/**
 * A job executor that answers `perform` with the work scripted for it, one answer per call, and records
 * every call (`perform`, the `record` of done work, `recordFailure`). For specs of the job runner.
 */
export class ScriptedJobExecutor implements JobExecutor {
  readonly calls: ScriptedExecutorCall[] = [];
  private readonly script: ScriptedWork[] = [];

  /** Queues the answers of the next `perform` calls. */
  willAnswer(...works: ScriptedWork[]): this {
    this.script.push(...works);
    return this;
  }

  /**
   * Work done at `target`; its `record()` is recorded as a call, after `beforeRecorded` ran (to look at the
   * streams then). It records no outcome of its own, so it commits the job's closing writes only when
   * `withClosing` is given the store (the runner then must not append them again).
   */
  done(target = 'scripted', beforeRecorded?: () => Promise<void>, withClosing?: EventStore): JobWork {
    return {
      kind: 'done',
      target,
      record: async (closing) => {
        await beforeRecorded?.();
        this.calls.push({ call: 'record', job_id: this.lastPerformed()?.id ?? '' });
        if (!withClosing || !closing) return false;
        // As an aggregate's update with alongside writes: refused ones are dropped, not thrown.
        return withClosing.appendMany(closing(new Date().toISOString()).appends).then(
          () => true,
          (err) => {
            if (err instanceof WrongExpectedRevisionError) return false;
            throw err;
          },
        );
      },
    };
  }

  async perform(job: JobState, attempt: JobAttempt): Promise<JobWork> {
    this.calls.push({ call: 'perform', job, attempt });
    const next = this.script.shift();
    if (!next) throw new Error(`ScriptedJobExecutor: no work scripted for job ${job.id}`);
    return typeof next === 'function' ? next(job, attempt) : next;
  }

  async recordFailure(job: JobState, error: HcpErrorShape): Promise<void> {
    this.calls.push({ call: 'recordFailure', job, error });
  }

  /** The answer of the next `reopen` calls: null to take the job again, or the refusal to throw. */
  reopenRefusal: HcpError | null = null;

  async reopen(job: JobState, context: EventContext): Promise<void> {
    this.calls.push({ call: 'reopen', job, actor: context.actor });
    if (this.reopenRefusal) throw this.reopenRefusal;
  }

  /** The names of the calls, in order (e.g. `['perform', 'record']`). */
  callNames(): Array<ScriptedExecutorCall['call']> {
    return this.calls.map((c) => c.call);
  }

  private lastPerformed(): JobState | undefined {
    const performs = this.calls.filter(
      (c): c is Extract<ScriptedExecutorCall, { call: 'perform' }> => c.call === 'perform',
    );
    return performs.at(-1)?.job;
  }
}
