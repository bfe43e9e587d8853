import { Inject, Injectable } from '@nestjs/common';
import { EventContext, HcpError } from '@hcp/domain';
import { QuotaEvent, quotaStreamId } from '@hcp/domain/quota/quota.events';
import { evolveQuota, QuotaState } from '@hcp/domain/quota/quota.state-machine';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository, Loaded } from '../eventing/aggregate-repository';
import { EVENT_STORE } from '../eventing/tokens';

export interface ContendedUpdateOptions {
  /** Load-decide-append rounds before a persisting concurrent change surfaces as CONFLICT. */
  attempts: number;
  /** The random pause before round n is up to `min(maxJitterMs, baseJitterMs * 2^(n-2))`. */
  baseJitterMs: number;
  maxJitterMs: number;
}

/**
 * Every create and delete of a project's VMs goes through its one quota stream, so that stream sees far
 * more contention than a VM's: a burst of creates in one project must all get decided (accepted or
 * QUOTA_EXCEEDED), not CONFLICT.
 */
export const QUOTA_CONTENTION: ContendedUpdateOptions = { attempts: 30, baseJitterMs: 5, maxJitterMs: 200 };

/**
 * The quota aggregate of each project, folded from its stream `quota-<project_id>`.
 *
 * Correctness rests on optimistic concurrency alone: a decision is appended only at the stream revision
 * it was taken on. Two things keep the retries few: inside one process, decisions on the same project
 * take turns (a promise chain per project), so only writers in other processes can ever conflict; and
 * after a conflict a writer waits a random, growing pause before it loads and decides again.
 */
@Injectable()
export class QuotaRepository extends AggregateRepository<QuotaState, QuotaEvent> {
  private readonly lanes = new Map<string, Promise<unknown>>();

  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    super(store, codec, quotaStreamId, evolveQuota);
  }

  /**
   * Folds the stream in revision order, sorting what the store returns: the PostgreSQL adapter's
   * readStream orders by the text of the revision (`ORDER BY revision` binds to the `revision::text`
   * output column), so from the 11th event on it returns 0, 1, 10, 11, 2, ... and the last row is not
   * the stream's head. A quota stream passes 10 events quickly, and both the fold and the expected
   * revision depend on the order.
   */
  override async load(projectId: string): Promise<Loaded<QuotaState>> {
    const recorded = (await this.store.readStream(this.streamOf(projectId))).sort((a, b) => (a.revision < b.revision ? -1 : a.revision > b.revision ? 1 : 0));
    let state: QuotaState | null = null;
    for (const r of recorded) {
      const { event, at } = this.codec.decode<QuotaEvent>(r);
      state = evolveQuota(state, event, at);
    }
    return { id: projectId, state, revision: recorded.length === 0 ? 'no_stream' : recorded[recorded.length - 1]!.revision };
  }

  /**
   * Load, decide, append; on a concurrent change decide again from the new state. A refusal of the
   * decision itself (QUOTA_EXCEEDED, INVALID_REQUEST) is thrown at once, never retried.
   */
  updateContended(
    projectId: string,
    decide: (state: QuotaState | null) => QuotaEvent[],
    context: EventContext,
    options: ContendedUpdateOptions = QUOTA_CONTENTION,
  ): Promise<{ state: QuotaState | null; events: QuotaEvent[] }> {
    return this.inLane(projectId, () => this.retrying(projectId, decide, context, options));
  }

  private async retrying(
    projectId: string,
    decide: (state: QuotaState | null) => QuotaEvent[],
    context: EventContext,
    options: ContendedUpdateOptions,
  ): Promise<{ state: QuotaState | null; events: QuotaEvent[] }> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.load(projectId);
      const events = decide(current.state);
      try {
        const { state } = await this.append(current, events, context);
        return { state, events };
      } catch (err) {
        if (!(err instanceof HcpError && err.code === 'CONFLICT') || attempt >= options.attempts) throw err;
      }
      await pause(Math.random() * Math.min(options.maxJitterMs, options.baseJitterMs * 2 ** (attempt - 1)));
    }
  }

  /** Runs `work` after every earlier decision on this project in this process has settled. */
  private inLane<T>(projectId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.lanes.get(projectId) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    this.lanes.set(projectId, tail);
    void tail.then(() => {
      if (this.lanes.get(projectId) === tail) this.lanes.delete(projectId);
    });
    return run;
  }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
