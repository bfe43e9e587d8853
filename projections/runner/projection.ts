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
  /**
   * The batch as one statement: the runner sends it with the checkpoint's move as one round trip and one
   * implicit transaction, instead of a transaction of three or more. What it must know first it reads
   * through `reader`, outside any transaction: only rows this projection alone writes (rows it remembers
   * writing, or that its earlier batches committed). Null, or a statement that wrote fewer rows than it
   * counted on: the batch goes through `apply` in a transaction.
   */
  oneStatement?(
    events: DecodedEvent[],
    reader: EntityManager,
  ): OneStatementBatch | null | Promise<OneStatementBatch | null>;
  /**
   * `oneStatement` may be asked for a full batch while the batch before it is still being written, so
   * that its CPU work overlaps the database's: it must answer synchronously from what it has worked out
   * so far (the batches it answered for, kept or not), read nothing, and guard every row it overwrites so
   * that the statement is refused where an earlier batch was not written as it answered. The runner sends
   * statements in order, and drops one worked out before an earlier batch took any other way.
   */
  readonly statementsAhead?: boolean;
}

/**
 * A batch written by one statement: data-modifying statements (`UPDATE`/`INSERT ... RETURNING`) that the
 * runner joins in one `WITH`, each returning one row per row it wrote.
 */
export interface OneStatementBatch {
  /** Each top-level-able inside a `WITH`; together they take the parameters `$1..$n` of `params`. */
  statements: string[];
  params: unknown[];
  /** The rows they must write together for the batch to count as applied. */
  rows: number;
  /** It committed with the checkpoint's move. */
  committed(): void;
  /**
   * It wrote fewer rows than `rows`, so nothing of it was kept (`apply` gets the batch next), or it
   * failed, or the runner dropped it before sending it.
   */
  refused(): void;
}
