import { DataSource, QueryRunner } from 'typeorm';
import { errorText } from './dead-letters';

/** An advisory lock this process holds for one projection; lost when its session ends. */
export interface ProjectionLock {
  release(): Promise<void>;
}

/** The pg client behind a query runner: what tells that the session ended. */
interface PgSession {
  on(event: 'error' | 'end', listener: (err?: Error) => void): unknown;
  removeListener(event: 'error' | 'end', listener: (err?: Error) => void): unknown;
}

interface Session {
  runner: QueryRunner;
  /** Stops listening to the pg client, before it goes back to the pool. */
  detach(): void;
  /** Set once the session ended: every lock it held is gone with it. */
  ended: boolean;
  /** The locks held on it, by key, each with what to tell its holder when the session ends. */
  held: Map<string, (err: Error) => void>;
}

/**
 * The advisory locks that make one instance of each projection active (the others stand by), all held
 * on one database session of the process. An active runner then takes no connection of the pool for
 * its lock: with one each, eleven runners on a pool of ten starved each other, the checkpoints moving
 * only every 5 to 30 s.
 *
 * The session ending (a DBA, a failover, the network) ends every lock it held: each holder is told, and
 * the next acquire opens a new session. Within the process a key is held once, whatever the session's
 * re-entrant locks would allow, so two runners of one projection are never both active.
 */
export class ProjectionLocks {
  private live: Session | null = null;
  private opening: Promise<Session> | null = null;

  constructor(private readonly db: DataSource) {}

  /** The lock of `key`, or null while another session (or another holder here) has it. */
  async tryAcquire(key: string, onLost: (err: Error) => void): Promise<ProjectionLock | null> {
    const session = await this.openSession();
    if (session.held.has(key)) return null;
    // Marked before the query, so a concurrent acquire of the same key here is refused meanwhile.
    session.held.set(key, onLost);
    let locked = false;
    try {
      const [row] = await session.runner.query(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [key]);
      locked = row?.locked === true;
    } finally {
      if (!locked) session.held.delete(key);
    }
    if (!locked) return null;
    if (session.ended) throw sessionEnded();
    return { release: () => this.release(session, key) };
  }

  /**
   * Unlocks every key and gives the session back to the pool; a session still opening is given back when
   * it opens, without waiting for it (a pool with no connection free must not hold up a stop). An acquire
   * after this opens a new session.
   */
  async close(): Promise<void> {
    void this.opening?.then(
      (session) => this.end(session),
      () => undefined,
    );
    if (this.live) await this.end(this.live);
  }

  private async release(session: Session, key: string): Promise<void> {
    if (session.ended || !session.held.delete(key)) return;
    await session.runner.query(`SELECT pg_advisory_unlock(hashtext($1))`, [key]).catch(() => undefined);
  }

  private openSession(): Promise<Session> {
    if (this.live) return Promise.resolve(this.live);
    this.opening ??= this.connect().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  private async connect(): Promise<Session> {
    const runner = this.db.createQueryRunner();
    let client: PgSession;
    try {
      client = (await runner.connect()) as PgSession;
    } catch (err) {
      await runner.release().catch(() => undefined);
      throw err;
    }
    const onEnd = (err?: Error) => {
      void this.end(session, err ?? new Error('the session closed'));
    };
    const session: Session = {
      runner,
      ended: false,
      held: new Map(),
      detach: () => {
        client.removeListener('error', onEnd);
        client.removeListener('end', onEnd);
      },
    };
    client.on('error', onEnd);
    client.on('end', onEnd);
    this.live = session;
    return session;
  }

  /** Ends `session`: given back unlocked (close), or, when it was `lost`, its holders told. */
  private async end(session: Session, lost?: Error): Promise<void> {
    if (session.ended) return;
    session.ended = true;
    session.detach();
    if (this.live === session) this.live = null;
    const holders = [...session.held.values()];
    session.held.clear();
    if (lost) for (const onLost of holders) onLost(sessionEnded(lost));
    else await session.runner.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
    await session.runner.release().catch(() => undefined);
  }
}

function sessionEnded(cause?: Error): Error {
  const reason = cause ? ` (${errorText(cause)})` : '';
  return new Error(`the session holding the advisory lock ended: connection lost${reason}`, { cause });
}
