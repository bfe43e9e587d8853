import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Injectable, Logger } from '@nestjs/common';
import { consoleSessionIsOver, decideConsoleSession } from '@hcp/domain';
import { eventContext } from '../platform/event-sourcing/event-context';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { ConsoleSessionHolds } from './console-session-holds';
import { ConsoleSessionRepository } from './console-session.repository';

/** How often each API instance looks for console sessions whose holder died. */
export const CONSOLE_SWEEP_MS = 30_000;
const BATCH = 100;

/**
 * Closes console sessions left open by an HCP instance that died: a connected session whose hold ran
 * out (its relay stopped renewing it) gets ConsoleSessionClosed with reason `instance_lost`, on behalf
 * of its owner as every close is. A hold whose session is closed already, or was never connected and
 * can no longer be, is dropped without an event. A failing run is counted and thrown to PeriodicTasks,
 * which logs it; the holds it took run out again and the next run takes them.
 */
@Injectable()
export class ConsoleSessionSweeper {
  readonly owner = `console-sweep:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly logger = new Logger('console-sweep');

  constructor(
    private readonly holds: ConsoleSessionHolds,
    private readonly sessions: ConsoleSessionRepository,
    private readonly metrics: HcpMetrics,
  ) {}

  /** Closes what it finds now; returns how many sessions it closed. */
  async sweep(): Promise<number> {
    try {
      let closed = 0;
      for (const sessionId of await this.holds.takeExpired(this.owner, BATCH)) {
        if (await this.settle(sessionId)) closed++;
      }
      if (closed > 0) this.logger.warn(`closed ${closed} console session(s) whose HCP instance died`);
      return closed;
    } catch (err) {
      this.metrics.consoleSweepFailures.inc();
      throw err;
    }
  }

  private async settle(sessionId: string): Promise<boolean> {
    const { state } = await this.sessions.load(sessionId);
    let closed = false;
    if (state?.status === 'connected') {
      const { events } = await this.sessions.update(
        sessionId,
        (current) =>
          decideConsoleSession(current, {
            type: 'close',
            reason: 'instance_lost',
            bytes_to_client: 0,
            bytes_to_provider: 0,
          }),
        eventContext(state.opened_by, `console-sweep-${sessionId}`),
      );
      closed = events.length > 0;
      if (closed) this.metrics.consoleSessionsSwept.inc({ reason: 'instance_lost' });
    } else if (state?.status === 'awaiting_connection' && !consoleSessionIsOver(state, new Date())) {
      // Its token can still be used: the hold stays (with the sweeper's new expiry) until it cannot.
      return false;
    }
    await this.holds.release(sessionId);
    return closed;
  }
}
