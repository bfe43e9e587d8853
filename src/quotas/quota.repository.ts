import { Inject, Injectable } from '@nestjs/common';
import { EventContext, evolveQuota, QuotaEvent, QuotaState, quotaStreamId } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { AggregateRepository, AlongsideWrites, RetryOptions } from '../platform/event-sourcing/aggregate-repository';
import { EVENT_STORE } from '../platform/tokens';

/**
 * Every create and delete of a project's VMs goes through its one quota stream, so that stream sees far
 * more contention than a VM's: a burst of creates in one project must all get decided (accepted or
 * QUOTA_EXCEEDED), not CONFLICT.
 */
export const QUOTA_CONTENTION: RetryOptions = { attempts: 30, baseJitterMs: 5, maxJitterMs: 200, lockFirst: true };

/** Most decisions one group commit takes: bounds the append (and the work redone after a conflict). */
const MAX_GROUP = 256;

interface Waiting {
  decide: (state: QuotaState | null) => QuotaEvent[];
  context: EventContext;
  alongside?: (events: QuotaEvent[]) => AlongsideWrites | undefined;
  resolve: (result: QuotaDecided) => void;
  reject: (error: unknown) => void;
}

/** A decision on the quota as it was committed; `alongside`: the caller's writes committed with it. */
export interface QuotaDecided {
  state: QuotaState | null;
  events: QuotaEvent[];
  alongside: boolean;
}

/**
 * The quota aggregate of each project, folded from its stream `quota-<project_id>`.
 *
 * Correctness rests on optimistic concurrency: a decision is appended only at the stream revision it
 * was taken on. Throughput comes from group commit: inside one process, the decisions on one project
 * that arrive while its previous group is being written wait, and are then decided together (each
 * against the state the ones before it leave) and appended in one append. So a burst of creates in one
 * project costs one load and one append per group, not per create. Writers in other processes (API
 * processes share the port) would refuse each other's appends: on a store that can, a group holds the
 * stream's lock from its read to its commit (`lockFirst`), so their groups queue instead. On one that
 * cannot, a refused group waits a random, growing pause before it decides again.
 *
 * A decision may bring writes to commit with it (a create's VM, job and queue row): the group's
 * appendMany carries them all, so a burst of creates costs one transaction per group, not per stream.
 */
@Injectable()
export class QuotaRepository extends AggregateRepository<QuotaState, QuotaEvent> {
  private readonly waiting = new Map<string, Waiting[]>();

  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    super(store, codec, quotaStreamId, evolveQuota);
  }

  /**
   * Decides on the project's quota, in a group with the decisions waiting beside it. A refusal of the
   * decision itself (QUOTA_EXCEEDED, INVALID_REQUEST) is this caller's alone and never retried.
   */
  updateContended(
    projectId: string,
    decide: (state: QuotaState | null) => QuotaEvent[],
    context: EventContext,
    options: RetryOptions = QUOTA_CONTENTION,
    alongside?: Waiting['alongside'],
  ): Promise<QuotaDecided> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { decide, context, alongside, resolve, reject };
      const queue = this.waiting.get(projectId);
      if (queue) return void queue.push(waiting);
      // Nobody is writing this project: this caller starts the groups and runs until the queue is empty.
      this.waiting.set(projectId, [waiting]);
      void this.writeGroups(projectId, options);
    });
  }

  private async writeGroups(projectId: string, options: RetryOptions): Promise<void> {
    const queue = this.waiting.get(projectId)!;
    while (queue.length > 0) {
      const group = queue.splice(0, MAX_GROUP);
      try {
        const outcomes = await this.updateMany(projectId, group, options);
        for (const [i, outcome] of outcomes.entries()) {
          if (outcome.ok)
            group[i].resolve({ state: outcome.state, events: outcome.events, alongside: outcome.alongside });
          else group[i].reject(outcome.error);
        }
      } catch (err) {
        for (const waiting of group) waiting.reject(err);
      }
    }
    this.waiting.delete(projectId);
  }
}
