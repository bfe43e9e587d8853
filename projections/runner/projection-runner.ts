import { Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { EventSchemaViolation } from '@hcp/domain';
import {
  DecodedEvent,
  DomainEventCodec,
  EventStore,
  RecordedEvent,
  START_POSITION,
  Subscription,
} from '@hcp/eventstore';
import { inCheckpointedStatement } from './checkpointed-statement';
import { inCheckpointedTransaction } from './checkpointed-transaction';
import { DeadLetterRecorded, errorText, insertDeadLetter, isTransientFailure } from './dead-letters';
import { OneStatementBatch, Projection } from './projection';
import { ProjectionLock, ProjectionLocks } from './projection-locks';

export interface ProjectionRunnerOptions {
  batchSize: number;
  /** Wait between tries to become the active instance and between tries of one event; the first restart's wait after a failure. */
  retryMs: number;
  /** Longest wait before a restart: the wait doubles with each failure in a row (with jitter) up to this. Default 30 s. */
  maxRetryMs?: number;
  /**
   * Longest wait before a restart after a transient failure (a database or broker away). Default 2 s: a try
   * costs one connection attempt, and a longer wait only keeps the read models behind once the outage ends.
   */
  maxTransientRetryMs?: number;
  /** Tries of one event alone, each failing for a reason not classified transient, before it is dead-lettered. */
  deadLetterAfter?: number;
  /** Told of every dead letter recorded (metrics); called after its transaction commits. */
  onDeadLetter?: (recorded: DeadLetterRecorded) => void;
  /** Told of every failure: a batch or a lone event that did not apply, a run that ended in error (metrics). */
  onFailure?: (err: unknown) => void;
  /** Told of every event skipped because this release does not know its type (metrics). */
  onUnknownEvent?: (type: string) => void;
  /**
   * Longest wait before the checkpoint moves past events the projection ignores (`Projection.eventTypes`)
   * when no batch it acts on comes to carry it. Default 250 ms.
   */
  idleCheckpointMs?: number;
  /**
   * Where the runner takes the advisory lock that makes it the active instance: the process's shared
   * locks (one session for all its projections), or by default a session of the runner's own.
   */
  locks?: ProjectionLocks;
}

export const DEFAULT_MAX_RETRY_MS = 30_000;
export const DEFAULT_MAX_TRANSIENT_RETRY_MS = 2_000;
export const DEFAULT_IDLE_CHECKPOINT_MS = 250;

/** The wait before restart number `failures` (1-based): doubling from `baseMs`, capped, with up to half taken off at random. */
export function restartBackoffMs(failures: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * The wait before a restart after `failures` failures in a row, the last being `err`. Doubling waits spare
 * a projection that fails on its own; an outage (a database or broker away; in the chaos suite's
 * postgres-kill, 30 s waits left the VM read model behind long after the restart) is probed at a short
 * cap instead, so the runner resumes within moments of the outage's end.
 */
export function restartWaitMs(
  err: unknown,
  failures: number,
  options: Pick<ProjectionRunnerOptions, 'retryMs' | 'maxRetryMs' | 'maxTransientRetryMs'>,
  random = Math.random,
): number {
  const maxMs = options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS;
  const cap = isTransientFailure(err)
    ? Math.min(options.maxTransientRetryMs ?? DEFAULT_MAX_TRANSIENT_RETRY_MS, maxMs)
    : maxMs;
  return restartBackoffMs(failures, options.retryMs, Math.max(cap, options.retryMs), random);
}

export const DEFAULT_DEAD_LETTER_AFTER = 3;

export interface ProjectionStatus {
  name: string;
  active: boolean;
  position: bigint;
  /** Failures in a row since this runner last applied an event or became active without error. */
  consecutiveFailures: number;
}

/**
 * Runs one projection: one active instance across all processes (a PostgreSQL advisory lock; the others
 * stand by), a catch-up-then-live subscription from the stored checkpoint, and micro-batches applied in
 * one transaction each together with the checkpoint. A transient failure restarts it from the checkpoint,
 * so an event is applied exactly once to the rows, whatever crashes.
 *
 * No poison event stops it. The rule for when an event is dead-lettered rather than retried forever:
 * 1. a failure classified transient (`isTransientFailure`: connection, timeout, serialization, broker not
 *    acknowledging, checkpoint moved) is never the event's: restart from the checkpoint, as always;
 * 2. any other failure of a batch re-applies that batch event by event (each in its own transaction with
 *    the checkpoint), which isolates the event that fails on its own;
 * 3. that event is tried alone `deadLetterAfter` times (3 by default, `retryMs` apart), every try failing
 *    for a non-transient reason;
 * 4. then a control: the last event the projection applied (remembered, or after a process restart the
 *    one at its checkpoint) is applied again in a transaction that is rolled back. If it fails too, the
 *    projection is broken for every event (a missing table, a bad release): nothing is dead-lettered and
 *    the runner restarts, so a broken projection never empties its stream into the dead letters. (With
 *    no such event, a projection that never applied one or whose checkpoint is a dead letter, rules 1
 *    to 3 decide alone.)
 * Only then is the event recorded in `projection_dead_letters`, in the transaction that moves the
 * checkpoint past it; the runner goes on with the next event, and ops retry or skip it
 * (`/v1/ops/dead-letters`). The control re-runs the event's external effects (a publication, a job
 * admission): they are idempotent already, since a batch is replayed after any crash.
 *
 * An event whose data fails its type's schema (EventSchemaViolation when decoded) is the event's fault by
 * definition, whatever the projection: it is dead-lettered at its first lone try, without the control.
 * Events of a type this release does not know are skipped, counted (`onUnknownEvent`) and logged once
 * per type.
 *
 * stop() always ends the loop: a runner stopped while it waits for a connection, its advisory lock or its
 * checkpoint never subscribes afterwards. Restarts after a failure wait longer each time (doubling, with
 * jitter, up to `maxRetryMs`; up to `maxTransientRetryMs` when the failure is an outage's), so a database
 * outage is waited out and the runner carries on as soon as it ends.
 */
export class ProjectionRunner {
  private readonly logger: Logger;
  private stopped = false;
  private active = false;
  private position = START_POSITION;
  private pending: RecordedEvent[] = [];
  private flushChain: Promise<void> = Promise.resolve();
  private flushScheduled = false;
  /**
   * Statements the projection answered for and that were not written as answered (refused, failed, or
   * dropped unsent): a statement built ahead before one of them may stand on rows the table does not
   * hold. A batch the projection had no statement for goes through `apply` without counting: whatever was
   * built ahead on the rows before it is refused by their positions.
   */
  private offPath = 0;
  private subscription: Subscription | null = null;
  private failRun: ((err: unknown) => void) | null = null;
  private loop: Promise<void> | null = null;
  private sleeping: { timer: NodeJS.Timeout; resolve: () => void } | null = null;
  /** Position of the last event read that the projection ignores, while the checkpoint is still before it. */
  private skippedTo: bigint | null = null;
  private skippedTimer: NodeJS.Timeout | null = null;
  /** The last event this runner applied without error: the control of rule 4 (kept across restarts). */
  private lastApplied: RecordedEvent | null = null;
  private consecutiveFailures = 0;
  /** Set when the session holding this run's advisory lock ends. */
  private lockLost: Error | null = null;
  private readonly unknownTypesLogged = new Set<string>();
  /** Rejects the waits of the loop (connection, lock, checkpoint) as soon as stop() is called. */
  private readonly stopping: Promise<never>;
  private signalStop: () => void = () => undefined;
  private readonly locks: ProjectionLocks;
  /** The runner opened its locks itself, so it closes them when it stops. */
  private readonly ownsLocks: boolean;

  constructor(
    private readonly db: DataSource,
    private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
    private readonly projection: Projection,
    private readonly options: ProjectionRunnerOptions = { batchSize: 500, retryMs: 1000 },
  ) {
    this.logger = new Logger(`projection:${projection.name}`);
    this.ownsLocks = !options.locks;
    this.locks = options.locks ?? new ProjectionLocks(db);
    this.stopping = new Promise<never>((_resolve, reject) => {
      this.signalStop = () => reject(new RunnerStoppedError());
    });
    this.stopping.catch(() => undefined);
  }

  start(): void {
    this.loop ??= this.supervise();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.signalStop();
    this.failRun?.(new RunnerStoppedError());
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.resolve();
    }
    await this.loop;
  }

  status(): ProjectionStatus {
    return {
      name: this.projection.name,
      active: this.active,
      position: this.position,
      consecutiveFailures: this.consecutiveFailures,
    };
  }

  private async supervise(): Promise<void> {
    while (!this.stopped) {
      let failure: { err: unknown } | undefined;
      this.lockLost = null;
      const acquiring = this.locks.tryAcquire(`hcp-projection:${this.projection.name}`, (err) => this.loseLock(err));
      let lock: ProjectionLock | null = null;
      try {
        lock = await this.unlessStopped(acquiring);
        if (lock && !this.stopped) {
          this.active = true;
          await this.runActive();
        }
      } catch (err) {
        if (!this.stopped) {
          failure = { err };
          this.recordFailure(err);
          this.logger.warn(
            `restarting from its checkpoint after: ${errorText(err)} (failure ${this.consecutiveFailures} in a row)`,
          );
        }
      } finally {
        this.active = false;
        await this.subscription?.stop().catch(() => undefined);
        this.subscription = null;
        // A lock that comes after stop() is given back as soon as it does.
        if (lock) await lock.release();
        else
          void acquiring.then(
            (late) => late?.release(),
            () => undefined,
          );
      }
      if (this.stopped) break;
      await this.sleep(
        failure ? restartWaitMs(failure.err, this.consecutiveFailures, this.options) : this.options.retryMs,
      );
    }
    if (this.ownsLocks) await this.locks.close();
  }

  /** The promise, unless stop() comes first: then RunnerStoppedError, so the loop ends without waiting on it. */
  private unlessStopped<T>(promise: Promise<T>): Promise<T> {
    return Promise.race([promise, this.stopping]);
  }

  private loseLock(err: Error): void {
    this.lockLost = err;
    this.failRun?.(err);
  }

  /** Counts a failure once (a batch failure may also end the run), for the backoff and the metric. */
  private recordFailure(err: unknown): void {
    if (err instanceof RunnerStoppedError) return;
    if (err !== null && typeof err === 'object') {
      if (counted.has(err)) return;
      counted.add(err);
    }
    this.consecutiveFailures++;
    this.options.onFailure?.(err);
  }

  /** Runs until the subscription or a flush fails, or until stop(). */
  private async runActive(): Promise<void> {
    this.pending = [];
    this.flushChain = Promise.resolve();
    this.skippedTo = null;
    this.position = await this.unlessStopped(this.readCheckpoint(this.db.manager));
    await new Promise<void>((_resolve, reject) => {
      this.failRun = reject;
      // stop() may have come while the checkpoint was read: its failRun found nothing to end then.
      if (this.stopped) {
        reject(new RunnerStoppedError());
        return;
      }
      if (this.lockLost) {
        reject(this.lockLost);
        return;
      }
      this.subscription = this.store.subscribeToAll((event) => this.onEvent(event), {
        fromPosition: this.position === START_POSITION ? 'start' : this.position,
        streamPrefixes: this.projection.streamPrefixes,
        onError: reject,
      });
    }).finally(() => {
      this.failRun = null;
      if (this.skippedTimer) clearTimeout(this.skippedTimer);
      this.skippedTimer = null;
    });
  }

  private async onEvent(event: RecordedEvent): Promise<void> {
    this.pending.push(event);
    if (this.pending.length >= this.options.batchSize) {
      await (this.projection.statementsAhead ? this.flushAhead() : this.flush());
    } else if (!this.flushScheduled) {
      // Flush once the subscription has handed over what it has at hand: big batches under load,
      // one-event batches (low lag) when idle.
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        // A full batch cut meanwhile took them.
        if (this.pending.length === 0) return;
        this.flush().catch((err) => this.failRun?.(err));
      });
    }
  }

  private flush(): Promise<void> {
    this.flushChain = this.flushChain.then(() => this.applyBatch(this.pending.splice(0)));
    return this.flushChain;
  }

  /**
   * A full batch cut now and worked out (decoded, its statement built) while the batch before it is
   * written: the subscription waits only for that one, so one batch is in the database while the next is
   * on the CPU. In a rebuild the process was idle half the time, the CPU and the database taking turns.
   * Order holds: the batch takes every event pending, and a flush chained before it (which takes what is
   * pending when its turn comes) has its turn before the subscription hands over another event.
   */
  private flushAhead(): Promise<void> {
    const batch = this.pending.splice(0);
    // After the turn of the callbacks that send the batch before it: its statement is on the wire first.
    const prepared = new Promise<PreparedBatch>((resolve) => setImmediate(() => resolve(this.prepare(batch))));
    const before = this.flushChain;
    this.flushChain = before.then(() => this.applyBatch(batch, prepared));
    this.flushChain.catch((err) => this.failRun?.(err));
    return before;
  }

  private prepare(batch: RecordedEvent[]): PreparedBatch {
    const generation = this.offPath;
    try {
      const decoded = this.decode(this.actedOn(batch));
      const statement = decoded.length ? (this.projection.oneStatement?.(decoded, this.db.manager) ?? null) : null;
      if (statement instanceof Promise)
        throw new TypeError(`${this.projection.name}: statementsAhead needs a synchronous oneStatement`);
      return { generation, decoded, statement };
    } catch (failure) {
      return { generation, failure };
    }
  }

  /** The events of `batch` the projection acts on. */
  private actedOn(batch: RecordedEvent[]): RecordedEvent[] {
    const types = this.projection.eventTypes;
    return types ? batch.filter((e) => types.has(e.type)) : batch;
  }

  private async applyBatch(batch: RecordedEvent[], prepared?: Promise<PreparedBatch>): Promise<void> {
    if (batch.length === 0) return;
    const upTo = batch[batch.length - 1].position;
    const events = this.actedOn(batch);
    if (events.length === 0) {
      this.skip(upTo);
      return;
    }
    try {
      await this.applyInOneTransaction(events, upTo, prepared && (await prepared));
    } catch (err) {
      this.offPath++;
      if (this.stopped) throw err;
      this.recordFailure(err);
      if (isTransientFailure(err)) throw err;
      // Rule 2: the batch event by event; an event before the bad one is applied (and checkpointed) alone.
      for (const event of events) await this.applyAlone(event, events.length === 1 ? err : null);
      if (upTo > this.position) this.skip(upTo);
    }
  }

  /**
   * Events and checkpoint (moved to `upTo`) in one transaction: the position moves only if the rows are
   * written. A batch the projection can write as one statement goes with the move in that statement.
   */
  private async applyInOneTransaction(events: RecordedEvent[], upTo: bigint, prepared?: PreparedBatch): Promise<void> {
    if (prepared && 'failure' in prepared) throw prepared.failure;
    let statement = prepared?.statement;
    if (statement && prepared!.generation !== this.offPath) {
      // Worked out on rows an earlier batch did not write as assumed: forgotten, and worked out again.
      statement.refused();
      this.offPath++;
      statement = undefined;
    }
    const decoded = prepared?.decoded ?? this.decode(events);
    const move = { projection: this.projection.name, previous: this.position, next: upTo };
    statement ??= await this.projection.oneStatement?.(decoded, this.db.manager);
    if (!(statement && (await inCheckpointedStatement(this.db, move, statement)))) {
      if (statement) this.offPath++;
      await inCheckpointedTransaction(this.db, move, (tx) => this.projection.apply(decoded, tx));
    }
    this.moved(upTo);
    this.lastApplied = events[events.length - 1];
    this.consecutiveFailures = 0;
  }

  /**
   * A batch with no event the projection acts on opens no transaction: a dozen projections woke on every
   * commit, and a quarter of their transactions only moved a checkpoint. The checkpoint moves past such
   * events with the next batch it acts on, or `idleCheckpointMs` later (through the flush chain, so never
   * beside a batch's transaction), so it still reaches the end of its streams. A restart before that reads
   * them again, and skips them again.
   */
  private skip(upTo: bigint): void {
    this.skippedTo = upTo;
    if (this.skippedTimer) return;
    this.skippedTimer = setTimeout(() => {
      this.skippedTimer = null;
      this.flushChain = this.flushChain.then(() => this.checkpointSkipped());
      this.flushChain.catch((err) => this.failRun?.(err));
    }, this.options.idleCheckpointMs ?? DEFAULT_IDLE_CHECKPOINT_MS);
    this.skippedTimer.unref();
  }

  private async checkpointSkipped(): Promise<void> {
    const upTo = this.skippedTo;
    if (upTo === null || upTo <= this.position) return;
    await inCheckpointedTransaction(
      this.db,
      { projection: this.projection.name, previous: this.position, next: upTo },
      async () => undefined,
    );
    this.moved(upTo);
  }

  /** The stored checkpoint is at `position` now. */
  private moved(position: bigint): void {
    this.position = position;
    if (this.skippedTo !== null && this.skippedTo <= position) this.skippedTo = null;
  }

  /**
   * Decoded inside the try: an event no upcaster can read, or whose data fails its schema, is as much a
   * poison as one `apply` refuses. Unknown types are skipped, counted and logged once per type.
   */
  private decode(batch: RecordedEvent[]) {
    return batch.filter((e) => this.knows(e)).map((e) => this.codec.decode(e));
  }

  private knows(event: RecordedEvent): boolean {
    if (this.codec.knows(event)) return true;
    this.options.onUnknownEvent?.(event.type);
    if (!this.unknownTypesLogged.has(event.type)) {
      this.unknownTypesLogged.add(event.type);
      this.logger.warn(
        `skipping events of type ${JSON.stringify(event.type.slice(0, 100))}, unknown to this release (first: ${event.id} at ${event.position}); hcp_events_unknown_total counts them`,
      );
    }
    return false;
  }

  /** Rules 3 and 4: one event, tried alone until it succeeds, fails transiently, or is dead-lettered. */
  private async applyAlone(event: RecordedEvent, firstFailure: unknown): Promise<void> {
    const tries = Math.max(1, this.options.deadLetterAfter ?? DEFAULT_DEAD_LETTER_AFTER);
    let failure = firstFailure;
    let attempts = firstFailure === null ? 0 : 1;
    while (attempts < tries && !isSchemaViolation(failure)) {
      if (attempts > 0) await this.pause();
      try {
        await this.applyInOneTransaction([event], event.position);
        return;
      } catch (err) {
        if (this.stopped) throw err;
        this.recordFailure(err);
        if (isTransientFailure(err)) throw err;
        failure = err;
        attempts++;
      }
    }
    // A schema violation is the event's alone: no control needed (the projection never saw the event).
    if (!isSchemaViolation(failure) && (await this.controlFails())) throw failure;
    await this.deadLetter(event, failure, attempts);
  }

  /** Rule 4: whether the last good event fails too now (a rolled-back transaction; no checkpoint). */
  private async controlFails(): Promise<boolean> {
    const control = this.lastApplied ?? (await this.checkpointEvent());
    if (!control) return false;
    const rolledBack = new Error('control applied; rolled back');
    try {
      await this.db.transaction(async (tx) => {
        await this.projection.apply(this.decode([control]), tx);
        throw rolledBack;
      });
    } catch (err) {
      if (err === rolledBack) return false;
      this.logger.error(
        `not dead-lettering: event ${control.id} that applied before fails now too (${errorText(err)}); the projection, not the event, is at fault`,
      );
      return true;
    }
    return false;
  }

  /**
   * After a process restart: the event at the checkpoint, which this projection applied (unless it is a
   * dead letter itself, which cannot be a control).
   */
  private async checkpointEvent(): Promise<RecordedEvent | null> {
    if (this.position === START_POSITION) return null;
    const [event] = await this.store.readAll(this.position - 1n, 1);
    if (!event || event.position !== this.position) return null;
    const dead: unknown[] = await this.db.query(
      `SELECT 1 FROM projection_dead_letters WHERE projection = $1 AND event_id = $2`,
      [this.projection.name, event.id],
    );
    return dead.length ? null : event;
  }

  private async deadLetter(event: RecordedEvent, failure: unknown, attempts: number): Promise<void> {
    const previous = this.position;
    const error = errorText(failure);
    const id = await inCheckpointedTransaction(
      this.db,
      { projection: this.projection.name, previous, next: event.position },
      (tx) => insertDeadLetter(tx, this.projection.name, event, error, attempts),
    );
    this.moved(event.position);
    this.logger.error(
      `dead-lettered event ${event.id} (${event.type} at ${event.position}) after ${attempts} tries: ${error}`,
    );
    this.options.onDeadLetter?.({
      id,
      projection: this.projection.name,
      position: event.position,
      eventId: event.id,
      eventType: event.type,
      error,
    });
  }

  /** Waits `retryMs` between tries of one event; stop() cuts it short and ends the run. */
  private async pause(): Promise<void> {
    await this.sleep(this.options.retryMs);
    if (this.stopped) throw new RunnerStoppedError();
  }

  private async readCheckpoint(em: EntityManager): Promise<bigint> {
    const rows = await em.query(`SELECT position FROM projection_checkpoints WHERE name = $1`, [this.projection.name]);
    return rows.length ? BigInt(rows[0].position) : START_POSITION;
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.sleeping = { timer: setTimeout(resolve, ms), resolve };
    });
  }
}

/**
 * A batch worked out before its turn (`flushAhead`): its events decoded and its statement built, or the
 * failure doing so met (thrown when its turn comes, so the batch goes event by event as any other).
 */
type PreparedBatch =
  | { generation: number; decoded: DecodedEvent[]; statement: OneStatementBatch | null }
  | { generation: number; failure: unknown };

/** How a wait of the loop ends when stop() is called; never a failure of the projection. */
class RunnerStoppedError extends Error {
  constructor() {
    super('stopping');
    this.name = 'RunnerStoppedError';
  }
}

/** Failures already counted: one failure may pass through a batch, a lone try and the run's end. */
const counted = new WeakSet<object>();

function isSchemaViolation(err: unknown): boolean {
  return err instanceof EventSchemaViolation;
}
