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
        // The store wakes the workers once the row has committed, with its own wake-up of the commit.
        sqlWrites: withRow ? [{ ...queueRowsWrite([queuedJobOf(queued)]), notifies: JOB_QUEUE_CHANNEL }] : [],
      },
    };
  }

  /**
   * After the opening committed: inserts the queue row if it could not commit with the events. When it
   * did, the store has woken the workers already: its NOTIFY goes after the commit, in the notifying
   * transaction that carries the store's own (a notifying commit takes a database-wide lock, see the
   * event store's CommitNotifier), so a group commit of creates sends one. A lost one costs the
   * workers' poll interval, never a job.
   */
  async opened(opening: JobOpening): Promise<void> {
    if (!opening.rowCommitted) await this.queue.enqueue(this.db.manager, [queuedJobOf(opening.queued)]);
  }
}
