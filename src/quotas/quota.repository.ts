import { Inject, Injectable } from '@nestjs/common';
import { EventContext } from '@hcp/domain';
import { QuotaEvent, quotaStreamId } from '@hcp/domain/quota/quota.events';
import { evolveQuota, evolveQuotaAll, QuotaState } from '@hcp/domain/quota/quota.state-machine';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository, RetryOptions } from '../eventing/aggregate-repository';
import { EVENT_STORE } from '../eventing/tokens';

/**
 * Every create and delete of a project's VMs goes through its one quota stream, so that stream sees far
 * more contention than a VM's: a burst of creates in one project must all get decided (accepted or
 * QUOTA_EXCEEDED), not CONFLICT.
 */
export const QUOTA_CONTENTION: RetryOptions = { attempts: 30, baseJitterMs: 5, maxJitterMs: 200 };

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

  /** A project's reservations grow with its VMs: copied once per fold, not once per event. */
  protected override fold(state: QuotaState | null, events: ReadonlyArray<{ event: QuotaEvent; at: string }>): QuotaState | null {
    return evolveQuotaAll(state, events);
  }

  /**
   * Load, decide, append; on a concurrent change decide again from the new state. A refusal of the
   * decision itself (QUOTA_EXCEEDED, INVALID_REQUEST) is thrown at once, never retried.
   */
  updateContended(
    projectId: string,
    decide: (state: QuotaState | null) => QuotaEvent[],
    context: EventContext,
    options: RetryOptions = QUOTA_CONTENTION,
  ): Promise<{ state: QuotaState | null; events: QuotaEvent[] }> {
    return this.inLane(projectId, () => this.update(projectId, decide, context, options));
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

