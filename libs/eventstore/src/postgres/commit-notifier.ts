import { escapeIdentifier, escapeLiteral, type Pool } from 'pg';
import { categoryOf, encodeCategories } from './stream-categories';

/**
 * Wakes subscribers after appends have committed.
 *
 * The NOTIFY is deliberately not part of the append transaction: PostgreSQL serialises the commits of
 * all notifying transactions behind one database-wide lock held through the WAL flush, which halves
 * append throughput under concurrency. Instead each store sends its own tiny notifying transaction after
 * a commit, merging the commits of a burst into one notification. A lost notification (crash between
 * COMMIT and NOTIFY) only delays delivery until the subscribers' next poll.
 */
export class CommitNotifier {
  private sending: Promise<void> | undefined;
  /** Categories of the streams appended to since the last notification went out. */
  private readonly pending = new Set<string>();
  /** Other channels to notify with it (see `wake`). */
  private readonly channels = new Set<string>();

  constructor(
    private readonly pool: Pool,
    private readonly channel: string,
  ) {}

  /**
   * Records that an append to `streamId` committed; a notification naming its category follows, shared
   * with any commits around it.
   */
  committed(streamId: string): void {
    this.pending.add(categoryOf(streamId));
    this.schedule();
  }

  /**
   * Records that a commit wrote what waiters on `channel` look for (a job's queue row): a bare NOTIFY on
   * it rides in the same notifying transaction as the commit's own, instead of one of its own.
   */
  wake(channel: string): void {
    this.channels.add(channel);
    this.schedule();
  }

  /** Resolves once no notification is in flight. */
  async flushed(): Promise<void> {
    await this.sending;
  }

  private schedule(): void {
    // Sent from a microtask, so the other streams of the same commit (reported in the same synchronous
    // loop) ride in this notification: started at once, it named the first stream's category alone and
    // the rest followed in a second notifying transaction, which woke the same subscribers again.
    this.sending ??= Promise.resolve().then(() => this.send());
  }

  private async send(): Promise<void> {
    while (this.pending.size > 0 || this.channels.size > 0) {
      const notifications = [...this.channels].map((channel) => `NOTIFY ${escapeIdentifier(channel)}`);
      if (this.pending.size > 0)
        notifications.unshift(
          `SELECT pg_notify(${escapeLiteral(this.channel)}, ${escapeLiteral(encodeCategories(this.pending))})`,
        );
      this.pending.clear();
      this.channels.clear();
      try {
        // Nothing durable is written, so there is no point waiting for a WAL flush.
        await this.pool.query(`BEGIN; SET LOCAL synchronous_commit TO off; ${notifications.join('; ')}; COMMIT`);
      } catch {
        // Subscribers poll as well; a failed wake-up costs latency, not events.
      }
    }
    this.sending = undefined;
  }
}
