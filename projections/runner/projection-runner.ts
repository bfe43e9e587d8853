import { Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DomainEventCodec, EventStore, RecordedEvent, START_POSITION, Subscription } from '@hcp/eventstore';
import { Projection } from './projection';

export interface ProjectionRunnerOptions {
  batchSize: number;
  /** Wait between tries to become the active instance, and before restarting after a failure. */
  retryMs: number;
}

export interface ProjectionStatus {
  name: string;
  active: boolean;
  position: bigint;
}

/**
 * Runs one projection: one active instance across all processes (a PostgreSQL advisory lock; the others
 * stand by), a catch-up-then-live subscription from the stored checkpoint, and micro-batches applied in
 * one transaction each together with the checkpoint. Any failure restarts it from the checkpoint, so an
 * event is applied exactly once to the rows, whatever crashes.
 */
export class ProjectionRunner {
  private readonly logger: Logger;
  private stopped = false;
  private active = false;
  private position = START_POSITION;
  private pending: RecordedEvent[] = [];
  private flushChain: Promise<void> = Promise.resolve();
  private flushScheduled = false;
  private subscription: Subscription | null = null;
  private failRun: ((err: unknown) => void) | null = null;
  private loop: Promise<void> | null = null;
  private sleeping: { timer: NodeJS.Timeout; resolve: () => void } | null = null;

  constructor(
    private readonly db: DataSource,
    private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
    private readonly projection: Projection,
    private readonly options: ProjectionRunnerOptions = { batchSize: 500, retryMs: 1000 },
  ) {
    this.logger = new Logger(`projection:${projection.name}`);
  }

  start(): void {
    this.loop ??= this.supervise();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.failRun?.(new Error('stopping'));
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.resolve();
    }
    await this.loop;
  }

  status(): ProjectionStatus {
    return { name: this.projection.name, active: this.active, position: this.position };
  }

  private async supervise(): Promise<void> {
    while (!this.stopped) {
      const lock = await this.db.createQueryRunner();
      try {
        await lock.connect();
        const [{ locked }] = await lock.query(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [
          `hcp-projection:${this.projection.name}`,
        ]);
        if (locked) {
          this.active = true;
          await this.runActive();
        }
      } catch (err) {
        if (!this.stopped) this.logger.warn(`restarting from its checkpoint after: ${(err as Error).message}`);
      } finally {
        this.active = false;
        await this.subscription?.stop().catch(() => undefined);
        this.subscription = null;
        await lock.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
        await lock.release().catch(() => undefined);
      }
      if (!this.stopped) await this.sleep(this.options.retryMs);
    }
  }

  /** Runs until the subscription or a flush fails, or until stop(). */
  private async runActive(): Promise<void> {
    this.pending = [];
    this.flushChain = Promise.resolve();
    this.position = await this.readCheckpoint(this.db.manager);
    await new Promise<void>((_resolve, reject) => {
      this.failRun = reject;
      this.subscription = this.store.subscribeToAll((event) => this.onEvent(event), {
        fromPosition: this.position === START_POSITION ? 'start' : this.position,
        streamPrefixes: this.projection.streamPrefixes,
        onError: reject,
      });
    }).finally(() => {
      this.failRun = null;
    });
  }

  private async onEvent(event: RecordedEvent): Promise<void> {
    this.pending.push(event);
    if (this.pending.length >= this.options.batchSize) {
      await this.flush();
    } else if (!this.flushScheduled) {
      // Flush once the subscription has handed over what it has at hand: big batches under load,
      // one-event batches (low lag) when idle.
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush().catch((err) => this.failRun?.(err));
      });
    }
  }

  private flush(): Promise<void> {
    this.flushChain = this.flushChain.then(() => this.applyBatch(this.pending.splice(0)));
    return this.flushChain;
  }

  private async applyBatch(batch: RecordedEvent[]): Promise<void> {
    if (batch.length === 0) return;
    const decoded = batch.filter((e) => this.codec.knows(e)).map((e) => this.codec.decode(e));
    const previous = this.position;
    const last = batch[batch.length - 1].position;
    await this.db.transaction(async (tx) => {
      await this.projection.apply(decoded, tx);
      await this.writeCheckpoint(tx, previous, last);
    });
    this.position = last;
  }

  private async readCheckpoint(em: EntityManager): Promise<bigint> {
    const rows = await em.query(`SELECT position FROM projection_checkpoints WHERE name = $1`, [this.projection.name]);
    return rows.length ? BigInt(rows[0].position) : START_POSITION;
  }

  /**
   * Compare-and-set: if another instance moved the checkpoint (it held the lock while ours was lost),
   * this transaction fails and the runner restarts instead of applying events twice.
   */
  private async writeCheckpoint(tx: EntityManager, previous: bigint, next: bigint): Promise<void> {
    const rows: unknown[] = await tx.query(
      `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()
       WHERE projection_checkpoints.position = $3
       RETURNING name`,
      [this.projection.name, next.toString(), previous.toString()],
    );
    if (rows.length !== 1) throw new Error(`checkpoint of ${this.projection.name} moved under us`);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.sleeping = { timer: setTimeout(resolve, ms), resolve };
    });
  }
}
