import type { EventHandler, RecordedEvent, Subscription } from '../event-store.port';
import type { NotificationListener } from './notification-listener';
import { concerns } from './stream-categories';

/** One catch-up read, as the store's reader returns it. */
export interface SubscriptionPage {
  /** Events that pass the subscription's filter, in position order. */
  events: RecordedEvent[];
  /** Last position examined, filtered out or not; the next read starts after it. */
  scannedTo: bigint | undefined;
  /** The read hit its limit, so more may be readable right away. */
  full: boolean;
  /** Committed events exist that are not safe to read yet because an older writer is still in flight. */
  blocked: boolean;
}

export interface PostgresSubscriptionConfig {
  readPage(after: bigint): Promise<SubscriptionPage>;
  listener: NotificationListener;
  /** The stream prefixes this subscription reads (null: all): commits elsewhere do not wake it. */
  prefixes: readonly string[] | null;
  handler: EventHandler;
  from: bigint;
  pollIntervalMs: number;
  /** How long consecutive read failures (database restart, network) are retried before giving up. */
  retryBudgetMs: number;
  onError?: (err: unknown) => void;
  /** Called once when the loop has ended and its resources are released. */
  onEnded(subscription: PostgresSubscription): void;
}

// A blocked read usually unblocks within milliseconds (an append committing), and that commit's NOTIFY
// may already have been consumed, so retry quickly, backing off in case a long transaction is the cause.
const FIRST_BLOCKED_RETRY_MS = 5;
const MAX_BLOCKED_RETRY_MS = 200;
const FIRST_FAILURE_RETRY_MS = 100;
const MAX_FAILURE_RETRY_MS = 2_000;

/**
 * Catch-up-then-live loop over the event table. Each event is handed to the handler, and awaited, before
 * the next one; a handler error ends the subscription (the owner restarts it from its own checkpoint,
 * which is the only place that knows what was durably processed).
 */
export class PostgresSubscription implements Subscription {
  private readonly wakeup = new Wakeup();
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(private readonly config: PostgresSubscriptionConfig) {
    this.done = this.runToEnd();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeup.signal();
    await this.done;
  }

  private async runToEnd(): Promise<void> {
    let failure: { error: unknown } | undefined;
    const wake = (categories: string[] | null): void => {
      if (concerns(categories, this.config.prefixes)) this.wakeup.signal();
    };
    try {
      this.config.listener.add(wake);
      await this.run();
    } catch (error) {
      failure = { error };
    } finally {
      await this.config.listener.remove(wake);
      this.config.onEnded(this);
    }
    if (failure && !this.stopped) this.report(failure.error);
  }

  private async run(): Promise<void> {
    const { readPage, handler, pollIntervalMs, retryBudgetMs } = this.config;
    let cursor = this.config.from;
    let blockedRetryMs = FIRST_BLOCKED_RETRY_MS;
    let failureRetryMs = FIRST_FAILURE_RETRY_MS;
    let failingSince: number | undefined;
    /** The read of the page after a full one, started before that page's events were handled. */
    let ahead: Promise<SubscriptionPage> | undefined;
    const read = (after: bigint): Promise<SubscriptionPage> => {
      // Anything signalled before this read is covered by it.
      this.wakeup.clear();
      return readPage(after);
    };

    while (!this.stopped) {
      let page: SubscriptionPage;
      try {
        page = await (ahead ?? read(cursor));
        failingSince = undefined;
        failureRetryMs = FIRST_FAILURE_RETRY_MS;
      } catch (err) {
        failingSince ??= Date.now();
        if (Date.now() - failingSince >= retryBudgetMs) throw err;
        await this.wakeup.wait(failureRetryMs);
        failureRetryMs = Math.min(failureRetryMs * 2, MAX_FAILURE_RETRY_MS);
        continue;
      } finally {
        ahead = undefined;
      }

      // More is readable right away: the database reads the next page while the handler works on this
      // one (a catch-up, a rebuild), instead of each waiting on the other.
      const end = pageEnd(page, cursor);
      if (page.full) {
        ahead = read(end);
        // Left unread when the handler fails or the subscription stops: its failure is nobody's.
        ahead.catch(() => undefined);
      }
      for (const event of page.events) {
        if (this.stopped) return;
        await handler(event);
        cursor = event.position;
      }
      cursor = end;

      if (page.full) continue;
      if (page.blocked) {
        await this.wakeup.wait(Math.min(blockedRetryMs, pollIntervalMs));
        blockedRetryMs = Math.min(blockedRetryMs * 2, MAX_BLOCKED_RETRY_MS);
      } else {
        blockedRetryMs = FIRST_BLOCKED_RETRY_MS;
        await this.wakeup.wait(pollIntervalMs);
      }
    }
  }

  private report(error: unknown): void {
    const onError =
      this.config.onError ??
      // Without an owner to tell, a stalled subscription must not go unnoticed: surface it as uncaught.
      ((err: unknown) => {
        throw err;
      });
    queueMicrotask(() => onError(error));
  }
}

/** Where the next read starts once every event of `page` is handled: past what it examined. */
function pageEnd(page: SubscriptionPage, cursor: bigint): bigint {
  const last = page.events.at(-1)?.position ?? cursor;
  return page.scannedTo !== undefined && page.scannedTo > last ? page.scannedTo : last;
}

/** A sticky wake-up signal: a signal that arrives while nobody waits is kept for the next wait. */
class Wakeup {
  private pending = false;
  private resolveWait: (() => void) | undefined;

  signal(): void {
    this.pending = true;
    this.resolveWait?.();
  }

  clear(): void {
    this.pending = false;
  }

  async wait(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.resolveWait = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.resolveWait = done;
    });
    this.pending = false;
  }
}
