import { Inject, Injectable } from '@nestjs/common';
import { EventContext, HcpError } from '@hcp/domain';
import { QuotaEvent, quotaStreamId } from '@hcp/domain/quota/quota.events';
import { evolveQuota, QuotaState } from '@hcp/domain/quota/quota.state-machine';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository } from '../eventing/aggregate-repository';
import { EVENT_STORE } from '../eventing/tokens';

export interface ContendedUpdateOptions {
  /** Load-decide-append rounds before a persisting concurrent change surfaces as CONFLICT. */
  attempts: number;
  /** Upper bound of the random pause before round n is `min(maxJitterMs, stepJitterMs * n)`. */
  stepJitterMs: number;
  maxJitterMs: number;
}

/**
 * Every create and delete of a project's VMs goes through its one quota stream, so that stream sees far
 * more contention than a VM's: a burst of creates in one project must all get decided (accepted or
 * QUOTA_EXCEEDED), not CONFLICT. Each round loses only to a writer that appended in between, so with
 * N concurrent writers at most N rounds are needed; the random pause spreads them out.
 */
export const QUOTA_CONTENTION: ContendedUpdateOptions = { attempts: 60, stepJitterMs: 4, maxJitterMs: 50 };

/** The quota aggregate of each project, folded from its stream `quota-<project_id>`. */
@Injectable()
export class QuotaRepository extends AggregateRepository<QuotaState, QuotaEvent> {
  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    super(store, codec, quotaStreamId, evolveQuota);
  }

  /**
   * Load, decide, append with optimistic concurrency on the stream revision; on a concurrent change
   * wait a little (random) and decide again from the new state. A refusal of the decision itself
   * (QUOTA_EXCEEDED, INVALID_REQUEST) is thrown at once, never retried.
   */
  async updateContended(
    projectId: string,
    decide: (state: QuotaState | null) => QuotaEvent[],
    context: EventContext,
    options: ContendedUpdateOptions = QUOTA_CONTENTION,
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
      await pause(Math.random() * Math.min(options.maxJitterMs, options.stepJitterMs * attempt));
    }
  }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
