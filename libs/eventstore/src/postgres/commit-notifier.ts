import { escapeLiteral, type Pool } from 'pg';
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
    // Sent from a microtask, so the other streams of the same commit (reported in the same synchronous
    // loop) ride in this notification: started at once, it named the first stream's category alone and
    // the rest followed in a second notifying transaction, which woke the same subscribers again.
    this.sending ??= Promise.resolve().then(() => this.send());
  }

  /** Resolves once no notification is in flight. */
  async flushed(): Promise<void> {
    await this.sending;
  }

  private async send(): Promise<void> {
    while (this.pending.size > 0) {
      const payload = encodeCategories(this.pending);
      this.pending.clear();
      try {
        // Nothing durable is written, so there is no point waiting for a WAL flush.
        await this.pool.query(
          `BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify(${escapeLiteral(this.channel)}, ${escapeLiteral(payload)}); COMMIT`,
        );
      } catch {
        // Subscribers poll as well; a failed wake-up costs latency, not events.
      }
    }
    this.sending = undefined;
  }
}
