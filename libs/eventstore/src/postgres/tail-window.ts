/** One read of the event table after a position, every stream, as far as it is safe to read. */
export interface TailRead<T> {
  items: T[];
  /** Last position read; undefined when nothing was. */
  scannedTo: bigint | undefined;
  /** The read hit its limit: more is readable right away. */
  full: boolean;
  /** The newest committed position when it was read. */
  head: bigint;
}

/** What a subscription gets from the window: a page as a read of its own would have returned it. */
export interface WindowPage<T> {
  items: T[];
  scannedTo: bigint | undefined;
  full: boolean;
  blocked: boolean;
}

export interface TailWindowOptions<T> {
  read(after: bigint): Promise<TailRead<T>>;
  positionOf(item: T): bigint;
  /** How many wake-ups the store's listener has handed out so far (see NotificationListener.wakeups). */
  wakeups(): number;
  pageSize: number;
  /** The newest events kept; a subscription further behind reads on its own. */
  maxItems: number;
}

/**
 * The newest events of the table, read once for all the live subscriptions of a process. Each of them
 * used to read the tail itself: the projections and the job dispatcher stand at different positions,
 * so most of their reads could not be shared (CoalescedPageReads shares only reads from one position),
 * and the same rows went over the wire three or four times, payload and all. The window holds the
 * rows after `from` up to `to`, contiguous (everything safe to read in that range; a later read never
 * finds a row inside it, see `safeToRead`), and extends itself from `to` with one read for every
 * subscription asking at once. A subscription inside the window gets its page from memory; one that asks
 * at the window's end (it has seen everything) causes a read, shared by all that ask before it goes out,
 * so a poll or a wake-up still reaches the database. A subscription behind `from` reads on its own.
 */
export class TailWindow<T> {
  private items: T[] = [];
  private started = false;
  private from = 0n;
  private to = 0n;
  /** The wake-up count when the read that brought `to` was asked: later wake-ups may have more. */
  private freshAs = 0;
  private head = 0n;
  private lastFull = false;
  /** Bumped on restart: a read asked before it belongs to another window. */
  private generation = 0;
  private extending: Promise<void> | undefined;

  constructor(private readonly options: TailWindowOptions<T>) {}

  /**
   * The page after `after` for a subscription woken by wake-up number `wakeup`, or null when the window
   * does not hold `after` and the caller must read on its own.
   */
  async page(after: bigint, wakeup: number): Promise<WindowPage<T> | null> {
    if (!this.started || after < this.from) return null;
    // Nothing held after `after` (it stands at the window's end, or beyond it): read the tail first.
    if (this.firstAfter(after) === this.items.length) await this.extend();
    if (after > this.to) {
      // One read did not reach the asker: the window has fallen behind the tail; start again there.
      this.restart(after, wakeup);
      return null;
    }
    if (after < this.from) return null;
    return this.slice(after, wakeup);
  }

  /**
   * A subscription reading on its own reached the tail at `end` (its read was not full), having asked
   * at wake-up `wakeup`: the window starts there if it has not started yet.
   */
  reachedTail(end: bigint, wakeup: number): void {
    if (!this.started) this.restart(end, wakeup);
  }

  private restart(at: bigint, wakeup: number): void {
    this.generation += 1;
    this.items = [];
    this.started = true;
    this.from = at;
    this.to = at;
    this.head = at;
    this.freshAs = wakeup;
    this.lastFull = false;
  }

  /**
   * A read from `to`, shared: those asking in the same tick join one that has not gone out yet; one asked
   * while a read is out waits for it and may find what it needs there, or ask again.
   */
  private extend(): Promise<void> {
    this.extending ??= nextTick()
      .then(() => this.readMore())
      .finally(() => {
        this.extending = undefined;
      });
    return this.extending;
  }

  private async readMore(): Promise<void> {
    const { generation, to } = this;
    const wakeup = this.options.wakeups();
    const read = await this.options.read(to);
    if (generation !== this.generation || to !== this.to) return;
    this.items.push(...read.items);
    if (read.scannedTo !== undefined && read.scannedTo > this.to) this.to = read.scannedTo;
    this.head = read.head;
    this.lastFull = read.full;
    this.freshAs = wakeup;
    const excess = this.items.length - this.options.maxItems;
    if (excess > 0) {
      this.from = this.options.positionOf(this.items[excess - 1]!);
      this.items.splice(0, excess);
    }
  }

  private slice(after: bigint, wakeup: number): WindowPage<T> {
    const start = this.firstAfter(after);
    const end = Math.min(start + this.options.pageSize, this.items.length);
    const items = this.items.slice(start, end);
    const reachesEnd = end === this.items.length;
    // Ask again at once when more is readable, or when a wake-up came after the read that brought `to`
    // (the subscription's wake-up signal is spent: waiting for the next one would sit on a commit).
    const full = !reachesEnd || this.lastFull || this.freshAs < wakeup;
    return {
      items,
      scannedTo: reachesEnd ? this.to : this.options.positionOf(items.at(-1)!),
      full,
      blocked: !full && this.head > this.to,
    };
  }

  /** Index of the first item after `after`: items are in position order. */
  private firstAfter(after: bigint): number {
    let low = 0;
    let high = this.items.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.options.positionOf(this.items[mid]!) <= after) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

const nextTick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));
