import { EntityManager } from 'typeorm';
import { DecodedEvent } from '@hcp/eventstore';

/**
 * A read model (or process manager) fed from the event stream. `apply` writes its rows through `tx`;
 * the runner writes the checkpoint in the same transaction, so rows and position never disagree.
 */
export interface Projection {
  readonly name: string;
  /** Streams this projection reads (prefixes of stream ids). */
  readonly streamPrefixes: string[];
  /**
   * Applies a batch. Anything slow and external (a broker) must be awaited before the first write: a
   * writing transaction holds back every event-store reader until it ends.
   */
  apply(events: DecodedEvent[], tx: EntityManager): Promise<void>;
}
