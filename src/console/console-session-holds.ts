import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryReturning } from '../platform/persistence/returning';

/** How long a hold lasts without renewal: an instance silent this long is taken for dead. */
export const CONSOLE_HOLD_MS = 60_000;
/** How often an instance renews the holds of the consoles it relays. */
export const CONSOLE_HOLD_RENEW_MS = CONSOLE_HOLD_MS / 3;

/**
 * Which HCP instance holds each console session it may be relaying (console_session_holds). Sessions
 * live in the event store only, and the relay lives in one process: when that process dies, nothing
 * would ever record the session's end. A hold is taken before the token is spent, given to the winner
 * once the connection is recorded, renewed while the relay runs, and dropped when the session is closed;
 * a hold that ran out is the sweeper's (ConsoleSessionSweeper).
 */
@Injectable()
export class ConsoleSessionHolds {
  /** This process: holds are renewed by the instance that took them, nobody else. */
  readonly instance = `console:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(private readonly db: DataSource) {}

  /**
   * Before the token is spent: a hold, unless someone has one. If this instance dies between spending
   * the token and `claim`, the session is already covered; a hold whose session was never connected is
   * only dropped by the sweeper.
   */
  async reserve(sessionId: string, holdMs = CONSOLE_HOLD_MS): Promise<void> {
    await this.db.query(
      `INSERT INTO console_session_holds (session_id, holder, expires_at)
       VALUES ($1, $2, now() + make_interval(secs => $3::double precision / 1000))
       ON CONFLICT (session_id) DO NOTHING`,
      [sessionId, this.instance, holdMs],
    );
  }

  /** The connection is recorded: this instance relays the session from here. */
  async claim(sessionId: string, holdMs = CONSOLE_HOLD_MS): Promise<void> {
    await this.db.query(
      `INSERT INTO console_session_holds (session_id, holder, expires_at)
       VALUES ($1, $2, now() + make_interval(secs => $3::double precision / 1000))
       ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at`,
      [sessionId, this.instance, holdMs],
    );
  }

  /** Renews this instance's holds of these sessions; returns those it still held (the others were swept). */
  async renew(sessionIds: string[], holdMs = CONSOLE_HOLD_MS): Promise<Set<string>> {
    if (sessionIds.length === 0) return new Set();
    const rows = await queryReturning<{ session_id: string }>(
      this.db,
      `UPDATE console_session_holds
       SET expires_at = now() + make_interval(secs => $3::double precision / 1000)
       WHERE holder = $1 AND session_id = ANY($2::text[])
       RETURNING session_id`,
      [this.instance, sessionIds, holdMs],
    );
    return new Set(rows.map((r) => r.session_id));
  }

  /** The session is closed: nothing left to hold. */
  async release(sessionId: string): Promise<void> {
    await this.db.query(`DELETE FROM console_session_holds WHERE session_id = $1`, [sessionId]);
  }

  /**
   * Takes up to `limit` holds that ran out for `sweeper`, for as long as a hold lasts, so two sweepers
   * never work on one session and a sweeper that dies midway leaves it to the next.
   */
  async takeExpired(sweeper: string, limit: number, holdMs = CONSOLE_HOLD_MS): Promise<string[]> {
    const rows = await queryReturning<{ session_id: string }>(
      this.db,
      `UPDATE console_session_holds
       SET holder = $1, expires_at = now() + make_interval(secs => $3::double precision / 1000)
       WHERE session_id IN (
         SELECT session_id FROM console_session_holds
         WHERE expires_at < now()
         ORDER BY expires_at
         LIMIT $2
         FOR UPDATE SKIP LOCKED
       )
       RETURNING session_id`,
      [sweeper, limit, holdMs],
    );
    return rows.map((r) => r.session_id);
  }
}
