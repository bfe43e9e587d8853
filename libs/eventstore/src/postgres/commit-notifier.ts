import { escapeLiteral, type Pool } from 'pg';

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
  private pending = false;
  private readonly script: string;

  constructor(
    private readonly pool: Pool,
    channel: string,
  ) {
    // Nothing durable is written, so there is no point waiting for a WAL flush.
    this.script = `BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify(${escapeLiteral(channel)}, ''); COMMIT`;
  }

  /** Records that an append committed; a notification follows, shared with any commits around it. */
  committed(): void {
    this.pending = true;
    this.sending ??= this.send();
  }

  /** Resolves once no notification is in flight. */
  async flushed(): Promise<void> {
    await this.sending;
  }

  private async send(): Promise<void> {
    while (this.pending) {
      this.pending = false;
      try {
        await this.pool.query(this.script);
      } catch {
        // Subscribers poll as well; a failed wake-up costs latency, not events.
      }
    }
    this.sending = undefined;
  }
}
