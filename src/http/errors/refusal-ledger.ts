import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { REFUSAL_EVENT_VERSIONS, REQUEST_STREAM_PREFIX, RequestRefusalsSuppressed } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { HcpConfig } from '../../config/hcp-config';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { HCP_CONFIG, EVENT_STORE } from '../../platform/tokens';
import { Refusal, RefusalBudget, RefusalVerdict } from '../rate-limit/refusal-budget';

/** The refusal budget's window, and how often its summaries are written. */
export const REFUSAL_WINDOW_MS = 60_000;

/**
 * The API's refusal budget (see RefusalBudget) and the writer of its summaries: one
 * `RequestRefusalsSuppressed` per client address (or actor) and window, on a request stream of its own
 * so the audit projection reads it beside the refusals it stands for. Written every window and when
 * the process stops, so counted refusals are not lost with it.
 */
@Injectable()
export class RefusalLedger implements BeforeApplicationShutdown {
  private readonly logger = new Logger('http');
  private readonly budget: RefusalBudget;

  constructor(
    @Inject(HCP_CONFIG) config: HcpConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
    private readonly metrics: HcpMetrics,
  ) {
    this.budget = new RefusalBudget({
      recordedPerWindow: config.refusals.recordedPerMinute,
      anonymousPerWindow: config.refusals.anonymousPerMinute,
      windowMs: REFUSAL_WINDOW_MS,
    });
  }

  async judge(refusal: Refusal): Promise<RefusalVerdict> {
    const verdict = await this.budget.judge(refusal);
    this.metrics.refusals.inc({
      channel: 'http',
      outcome: verdict.kind === 'record' ? 'recorded' : verdict.kind === 'count' ? 'counted' : 'rate_limited',
    });
    return verdict;
  }

  /** Appends the summaries of the refusals counted since the last call. */
  async writeSummaries(): Promise<void> {
    for (const data of this.budget.takeSummaries()) {
      const event: RequestRefusalsSuppressed = {
        type: 'RequestRefusalsSuppressed',
        version: REFUSAL_EVENT_VERSIONS.RequestRefusalsSuppressed,
        data,
      };
      const id = randomUUID();
      await this.store.append(
        `${REQUEST_STREAM_PREFIX}${id}`,
        [this.codec.encode(event, eventContext(data.actor ?? 'anonymous', id), id)],
        'no_stream',
      );
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.writeSummaries().catch((err: unknown) =>
      this.logger.error({ msg: 'could not record the summary of suppressed refusals', err }),
    );
  }
}
