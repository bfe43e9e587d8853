/** Reads the event table after a position, filtered by stream prefixes (null: every stream). */
export type PageRead<Row> = (after: bigint, prefixes: string[] | null) => Promise<Row[]>;

interface Gathering<Row> {
  /** Prefixes of the readers gathered so far; null once one of them reads every stream. */
  prefixes: Set<string> | null;
  rows: Promise<Row[]>;
}

/**
 * One statement for the subscriptions that read the tail of the event table from the same position at
 * once. A commit's NOTIFY wakes every subscription whose categories it names, and live ones all stand at
 * the head: without this, each of them (the projections and the VM job dispatcher of the worker's
 * process) read the same rows in a round trip of its own, ~19 reads per job where 4 commits happen.
 *
 * Readers that ask before the next tick (those one notification wakes), for the same position and after
 * the same wake-up, share one read filtered by the union of their prefixes (each filters the answer to its
 * own again). A reader woken by a later notification never joins a read asked for before it: that read
 * may not see the commit it was woken for, and its wake-up signal is spent.
 */
export class CoalescedPageReads<Row> {
  private readonly gathering = new Map<string, Gathering<Row>>();

  constructor(private readonly readPage: PageRead<Row>) {}

  /** The rows after `after` for a reader woken by wake-up number `wakeup`, read once per gathering. */
  read(after: bigint, wakeup: number, prefixes: readonly string[] | null): Promise<Row[]> {
    const key = `${after}@${wakeup}`;
    const gathering = this.gathering.get(key) ?? this.gather(key, after);
    if (prefixes === null) gathering.prefixes = null;
    else for (const prefix of prefixes) gathering.prefixes?.add(prefix);
    return gathering.rows;
  }

  private gather(key: string, after: bigint): Gathering<Row> {
    const gathering: Gathering<Row> = {
      prefixes: new Set(),
      // The readers one notification wakes all ask from promise continuations of its callback; a tick
      // runs once those have drained, so it sees them all (setImmediate would also wait for other I/O).
      rows: nextTick().then(() => {
        this.gathering.delete(key);
        return this.readPage(after, gathering.prefixes === null ? null : [...gathering.prefixes]);
      }),
    };
    this.gathering.set(key, gathering);
    return gathering;
  }
}

const nextTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));
