import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { conflict, notFound } from '@hcp/domain';
import { DomainEventCodec, EventStore, RecordedEvent } from '@hcp/eventstore';
import { Projection } from './projection';

/**
 * Dead letters: events a projection could not apply, recorded in `projection_dead_letters` in the
 * transaction that moves the projection's checkpoint past them, so one bad event never stops the rest.
 *
 * - `open`: recorded by the runner, or retried by ops and still failing;
 * - `resolved`: ops retried it and the projection applied it (its sink records were published then);
 * - `skipped`: ops decided the event will never be applied (an explicit, audited request);
 * - `retried`: in the schema's set as issue #13 named it, but nothing sets it yet (a failed retry stays
 *   `open` with its new error, a successful one is `resolved`).
 */
export type DeadLetterStatus = 'open' | 'retried' | 'skipped' | 'resolved';
export const DEAD_LETTER_STATUSES: readonly DeadLetterStatus[] = ['open', 'retried', 'skipped', 'resolved'];

export interface DeadLetter {
  id: string;
  projection: string;
  position: string;
  event_id: string;
  stream_id: string;
  stream_revision: string;
  event_type: string;
  error: string;
  attempts: number;
  status: DeadLetterStatus;
  first_failed_at: Date;
  last_failed_at: Date;
  updated_at: Date;
}

/** What the runner reports when it dead-letters an event (for metrics and logs). */
export interface DeadLetterRecorded {
  id: string;
  projection: string;
  position: bigint;
  eventId: string;
  eventType: string;
  error: string;
}

/** Long enough for any message HCP writes; a driver's novel stays out of the table. */
const MAX_ERROR_CHARS = 2000;

export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text;
}

/** The compare-and-set of a checkpoint failed: another instance moved it. Never the event's fault. */
export class CheckpointMovedError extends Error {
  constructor(projection: string) {
    super(`checkpoint of ${projection} moved under us`);
    this.name = 'CheckpointMovedError';
  }
}

// SQLSTATE classes that say nothing about the data: connection (08), rollback for serialization or
// deadlock (40), resources (53), operator intervention such as a shutdown or a statement timeout (57),
// system errors (58). Plus lock_not_available (55P03).
const TRANSIENT_SQLSTATE = /^(08|40|53|57|58)|^55P03$/;
const TRANSIENT_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const TRANSIENT_MESSAGE = /time(d)? ?out|connection (terminated|closed|lost|refused|reset)|ECONN|socket hang up/i;

/**
 * Whether a failure may be the world's rather than the event's: a lost or refused connection, a
 * timeout, a serialization failure, a broker that did not acknowledge (MessagingError.retriable,
 * HcpError.retryable), a checkpoint another instance moved. Such a failure is never dead-lettered: the
 * runner restarts from its checkpoint and tries again, however long it takes. The cause chain counts.
 */
export function isTransientFailure(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; retriable?: unknown; retryable?: unknown; message?: unknown; cause?: unknown };
  if (err instanceof CheckpointMovedError) return true;
  if (e.retriable === true || e.retryable === true) return true;
  if (typeof e.code === 'string' && (TRANSIENT_SQLSTATE.test(e.code) || TRANSIENT_NODE_CODES.has(e.code))) return true;
  if (typeof e.message === 'string' && TRANSIENT_MESSAGE.test(e.message)) return true;
  if (err instanceof AggregateError && err.errors.some((inner) => isTransientFailure(inner, depth + 1))) return true;
  return isTransientFailure(e.cause, depth + 1);
}

/**
 * Records `event` as a dead letter of `projection`. Runs in the caller's transaction (the one that moves
 * the checkpoint past the event). An event dead-lettered again (after a rebuild) reopens its row.
 */
export async function insertDeadLetter(
  tx: EntityManager,
  projection: string,
  event: RecordedEvent,
  error: string,
  attempts: number,
): Promise<string> {
  const rows: Array<{ id: string }> = await tx.query(
    `INSERT INTO projection_dead_letters
       (id, projection, position, event_id, stream_id, stream_revision, event_type, error, attempts, status,
        first_failed_at, last_failed_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'open', now(), now(), now())
     ON CONFLICT (projection, event_id) DO UPDATE SET
       error = EXCLUDED.error, attempts = projection_dead_letters.attempts + EXCLUDED.attempts, status = 'open',
       position = EXCLUDED.position, last_failed_at = now(), updated_at = now()
     RETURNING id`,
    [
      randomUUID(),
      projection,
      event.position.toString(),
      event.id,
      event.streamId,
      event.revision.toString(),
      event.type,
      error,
      attempts,
    ],
  );
  return rows[0].id;
}

export type RetryOutcome = { outcome: 'resolved' | 'failed'; letter: DeadLetter };

/**
 * Applies one dead letter's event through its projection now, outside the stream's order (the runner
 * has moved on). In one transaction with marking the letter resolved; a failure leaves it open with the
 * new error and one more attempt. The projection is the live one (real sinks), so an audit or metering
 * record that could not be published before is published when its retry succeeds.
 */
export async function retryDeadLetter(
  db: DataSource,
  store: EventStore,
  codec: DomainEventCodec,
  projectionOf: (name: string) => Projection | undefined,
  id: string,
): Promise<RetryOutcome> {
  return db
    .transaction(async (tx): Promise<RetryOutcome> => {
      // NOWAIT: a second retry of the same letter while one runs is refused, not queued behind it.
      const rows: DeadLetter[] = await tx.query(
        `SELECT * FROM projection_dead_letters WHERE id = $1 FOR UPDATE NOWAIT`,
        [id],
      );
      const letter = rows[0];
      if (!letter) throw notFound('dead letter');
      if (letter.status === 'resolved') throw conflict('the dead letter is resolved already');
      const projection = projectionOf(letter.projection);
      if (!projection) throw conflict(`projection ${letter.projection} does not run in this release`);
      await tx.query('SAVEPOINT dead_letter_retry');
      try {
        const event = await readEvent(store, letter);
        await projection.apply(codec.knows(event) ? [codec.decode(event)] : [], tx);
      } catch (err) {
        await tx.query('ROLLBACK TO SAVEPOINT dead_letter_retry');
        const failed: DeadLetter[] = await tx.query(
          `WITH failed AS (
             UPDATE projection_dead_letters
             SET status = 'open', error = $2, attempts = attempts + 1, last_failed_at = now(), updated_at = now()
             WHERE id = $1 RETURNING *
           )
           SELECT * FROM failed`,
          [id, errorText(err)],
        );
        return { outcome: 'failed', letter: failed[0] };
      }
      const done: DeadLetter[] = await tx.query(
        `WITH done AS (
           UPDATE projection_dead_letters SET status = 'resolved', updated_at = now() WHERE id = $1 RETURNING *
         )
         SELECT * FROM done`,
        [id],
      );
      return { outcome: 'resolved', letter: done[0] };
    })
    .catch((err: unknown) => {
      if ((err as { code?: string }).code === '55P03') throw conflict('the dead letter is being retried already');
      throw err;
    });
}

/** The dead letter's event as stored, found by stream and revision and checked by id. */
async function readEvent(store: EventStore, letter: DeadLetter): Promise<RecordedEvent> {
  const [event] = await store.readStream(letter.stream_id, {
    fromRevision: BigInt(letter.stream_revision),
    maxCount: 1,
  });
  if (!event || event.id !== letter.event_id)
    throw new Error(`event ${letter.event_id} is no longer at ${letter.stream_id}@${letter.stream_revision}`);
  return event;
}

/** Marks a letter skipped: ops decided its event will never be applied. Resolved letters stay resolved. */
export async function skipDeadLetter(db: DataSource, id: string): Promise<DeadLetter> {
  const rows: DeadLetter[] = await db.query(
    `WITH done AS (
       UPDATE projection_dead_letters SET status = 'skipped', updated_at = now()
       WHERE id = $1 AND status <> 'resolved' RETURNING *
     )
     SELECT * FROM done`,
    [id],
  );
  if (rows[0]) return rows[0];
  const exists: unknown[] = await db.query(`SELECT 1 FROM projection_dead_letters WHERE id = $1`, [id]);
  if (exists.length === 0) throw notFound('dead letter');
  throw conflict('the dead letter is resolved already');
}
