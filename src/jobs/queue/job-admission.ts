import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventContext, JobQueued } from '@hcp/domain';
import type { AlongsideWrites } from '../../platform/event-sourcing/aggregate-repository';
import { JobRepository } from '../job.repository';
import { JOB_QUEUE_CHANNEL, JobQueue, queuedJobOf, queueRowsWrite } from './job-queue';

/**
 * Opens a job the moment its request is accepted: its JobQueued event, then its queue row, so a worker
 * can take it at once. A context whose requests become jobs also derives them from its own events
 * (see the VM job dispatcher), so a crash between these two writes loses no job.
 *
 * Where the event store shares the database (PostgreSQL), a request can instead commit the job with
 * its own events (`opening`, then `opened` once committed): event, queue row and request in one
 * transaction, nothing to recover. Elsewhere the JobQueued still commits with the request (stream by
 * stream) and the queue row follows, as with admit.
 */
/** A job opened inside its request's own commit. */
export interface JobOpening {
  queued: JobQueued;
  context: EventContext;
  writes: AlongsideWrites;
  /** The queue row is among the writes (the store commits SQL writes with its events). */
  rowCommitted: boolean;
}

@Injectable()
export class JobAdmission {
  /** The wake-ups sent and to send, one after another. */
  private waking: Promise<void> = Promise.resolve();
  /** A wake-up is scheduled and not sent yet: it covers every commit reported until it goes. */
  private wakePending = false;

  constructor(
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly db: DataSource,
  ) {}

  async admit(queued: JobQueued, context: EventContext): Promise<void> {
    await this.jobs.ensureQueued(queued, context);
    await this.queue.enqueue(this.db.manager, [queuedJobOf(queued)]);
  }

  /**
   * The writes that open the job inside the caller's appendMany: its JobQueued and, when the store
   * commits SQL writes with its events, its queue row. Once they are committed, call `opened`.
   */
  opening(queued: JobQueued, context: EventContext): JobOpening {
    const withRow = this.jobs.commitsSqlWrites;
    return {
      queued,
      context,
      rowCommitted: withRow,
      writes: {
        appends: [this.jobs.opening(queued, context)],
        sqlWrites: withRow ? [queueRowsWrite([queuedJobOf(queued)])] : [],
      },
    };
  }

  /**
   * After the opening committed: inserts the queue row if it could not commit with the events, else
   * wakes the workers. That NOTIFY is not in the transaction: a notifying commit takes a database-wide
   * lock (see the event store's CommitNotifier). It goes at the end of this turn of the event loop, so
   * the creates of one group commit, which all get here in that turn, share it (they sent two: the first
   * one's, and one more for the rest); a lost one costs the workers' poll interval, never a job.
   */
  async opened(opening: JobOpening): Promise<void> {
    if (!opening.rowCommitted) return this.queue.enqueue(this.db.manager, [queuedJobOf(opening.queued)]);
    if (this.wakePending) return;
    this.wakePending = true;
    this.waking = this.waking
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(async () => {
        this.wakePending = false;
        await this.db.query(`NOTIFY ${JOB_QUEUE_CHANNEL}`).catch(() => undefined);
      });
  }
}
