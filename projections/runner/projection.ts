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
   * The event types `apply` acts on, when it ignores every other type of its streams: the runner hands it
   * only these, and opens no transaction for a batch without one (the checkpoint still moves past them).
   * Absent: every event of its streams. Stored type names are never changed by upcasters (they upcast
   * the data of one type), so the stored type decides.
   */
  readonly eventTypes?: ReadonlySet<string>;
  /**
   * Applies a batch. Anything slow and external (a broker) must be awaited before the first write: a
   * writing transaction holds back every event-store reader until it ends.
   */
  apply(events: DecodedEvent[], tx: EntityManager): Promise<void>;
}
