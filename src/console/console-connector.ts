import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Duplex } from 'node:stream';
import {
  ConsoleCloseReason,
  ConsoleRefusalReason,
  ConsoleSessionState,
  consoleConnectRefusal,
  consoleSessionIsOver,
  decideConsoleSession,
  HcpError,
  notFound,
  VmState,
} from '@hcp/domain';
import { connectRfbServer, RfbHandshakeError } from '@hcp/providers';
import { HcpConfig } from '../config/hcp-config';
import { SlidingWindowLimiter } from '../http/rate-limit/sliding-window-limiter';
import { eventContext } from '../platform/event-sourcing/event-context';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { HCP_CONFIG } from '../platform/tokens';
import { DriverRegistry } from '../ops';
import { VmRepository } from '../vms';
import { ConsoleSessionHolds } from './console-session-holds';
import { ConsoleSessionRepository } from './console-session.repository';
import { consoleTokenDigest } from './open-console-session.handler';

/** A session whose token was just used, with the provider's console open and authenticated. */
export interface ConnectedConsole {
  session: ConsoleSessionState;
  /** The provider's RFB stream, positioned at ClientInit: relay from here. */
  provider: Duplex;
  traceId: string;
}

const PROVIDER_CALL_MS = 20_000;
const REFUSAL_WINDOW_MS = 60_000;
const REFUSAL_APPEND_RETRIES = { attempts: 8, baseJitterMs: 5, maxJitterMs: 100 };
const RFB_HANDSHAKE_MS = 10_000;

const REFUSAL_MESSAGES: Record<ConsoleRefusalReason, string> = {
  token_invalid: 'the console token is not valid for this session',
  token_used: 'the console token was used already; open a new session',
  token_expired: 'the console token expired; open a new session',
};

/** VM statuses a connected console survives; anything else closes it. */
export const CONSOLE_KEEPS_VM_STATUSES: ReadonlySet<VmState['status']> = new Set(['running', 'rebooting', 'stopping']);

/**
 * The connect half of a console session, independent of websockets: use the token once (an event
 * appended at the session's expected revision, so two instances racing with one token cannot both
 * win), check the VM is running, ask its driver for a fresh provider console and authenticate to it.
 * Every refusal after the token is used closes the session, so each session ends with an event.
 *
 * A refused token is recorded as the anonymous caller's (with its client address), not the owner's: it
 * is not the owner presenting it. Only refusals of a live session are recorded, and at most
 * HCP_CONSOLE_REFUSALS_RECORDED_PER_MINUTE per session and per address (per process); the others are
 * answered alike and counted in hcp_refusals_total only, so a known session id is no lever for writes.
 */
@Injectable()
export class ConsoleConnector {
  private readonly logger = new Logger('console');
  /** Sliding-window counters of recorded refusals, per session and per client address. */
  private readonly recordedRefusals = new SlidingWindowLimiter(Date.now, REFUSAL_WINDOW_MS);
  private readonly refusalsPerWindow: number;

  constructor(
    private readonly sessions: ConsoleSessionRepository,
    private readonly vms: VmRepository,
    private readonly drivers: DriverRegistry,
    private readonly metrics: HcpMetrics,
    @Inject(HCP_CONFIG) config: HcpConfig,
    private readonly holds: ConsoleSessionHolds,
  ) {
    this.refusalsPerWindow = config.console.refusalsRecordedPerMinute;
  }

  async connect(
    sessionId: string,
    token: string,
    traceId: string,
    clientAddress: string | null = null,
  ): Promise<ConnectedConsole> {
    const { state: opened } = await this.sessions.load(sessionId);
    if (!opened) throw notFound('console session');
    const command = {
      type: 'connect' as const,
      token_sha256: consoleTokenDigest(token),
      now: new Date(),
      client_address: clientAddress,
    };
    const verdict: { refusal: ConsoleRefusalReason | null } = {
      refusal: consoleConnectRefusal(opened, command.token_sha256, command.now),
    };
    let session = opened;
    if (!verdict.refusal) {
      // Held before the token is spent: should this instance die right after, the sweeper closes it.
      await this.holds.reserve(sessionId);
      // The token is right as far as this instance knows: use it on the owner's behalf. The append at
      // the expected revision decides: another instance may have used it since.
      const { state } = await this.sessions.update(
        sessionId,
        (current) => {
          verdict.refusal = current
            ? consoleConnectRefusal(current, command.token_sha256, command.now)
            : 'token_invalid';
          return verdict.refusal ? [] : decideConsoleSession(current, command);
        },
        eventContext(opened.opened_by, traceId),
      );
      session = state!;
      if (!verdict.refusal) await this.holds.claim(sessionId);
    }
    if (verdict.refusal) {
      await this.recordRefusal(session, command, traceId);
      throw new HcpError('UNAUTHORIZED', REFUSAL_MESSAGES[verdict.refusal]);
    }

    const { state: vm } = await this.vms.load(session.vm_id);
    if (vm?.status !== 'running') {
      await this.close(session, 'vm_not_running', traceId);
      throw new HcpError('CONFLICT', `a console needs a running VM; the VM is ${vm?.status ?? 'deleted'}`, {
        status: vm?.status ?? 'deleted',
      });
    }
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), PROVIDER_CALL_MS);
    try {
      const driver = await this.drivers.driverFor(vm.placement.provider_id, vm.placement.cluster_id);
      const console = await driver.openConsole(session.vm_id, session.type, {
        deadline: new Date(Date.now() + PROVIDER_CALL_MS),
        signal: abort.signal,
        trace_id: traceId,
      });
      try {
        await connectRfbServer(console.stream, { password: console.rfb_password, timeoutMs: RFB_HANDSHAKE_MS });
      } catch (err) {
        console.stream.destroy();
        throw err;
      }
      return { session, provider: console.stream, traceId };
    } catch (err) {
      await this.close(
        session,
        err instanceof HcpError && err.code === 'CONFLICT' ? 'vm_not_running' : 'provider_failed',
        traceId,
      );
      if (err instanceof RfbHandshakeError)
        throw new HcpError('PROVIDER_UNAVAILABLE', 'the provider did not accept the console connection');
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Appends a refusal as the anonymous caller's, if the session is live and the budget allows. */
  private async recordRefusal(
    session: ConsoleSessionState,
    command: { type: 'connect'; token_sha256: string; now: Date; client_address: string | null },
    traceId: string,
  ): Promise<void> {
    const outcome = consoleSessionIsOver(session, command.now)
      ? 'not_recorded'
      : (await this.withinRefusalBudget(session.session_id, command.client_address))
        ? 'recorded'
        : 'counted';
    if (outcome === 'recorded') {
      // Concurrent refusals of one session race for its revision: retry with jitter, and answer the
      // refusal alike if it still cannot be recorded (the caller is refused either way).
      const recorded = await this.sessions
        .update(
          session.session_id,
          // Only the refusal: the decider appends nothing for a session that ended meanwhile.
          (current) => decideConsoleSession(current, command).filter((e) => e.type === 'ConsoleSessionRefused'),
          eventContext('anonymous', traceId),
          REFUSAL_APPEND_RETRIES,
        )
        .then(
          () => true,
          (err: unknown) => {
            this.logger.warn({
              msg: 'could not record a console refusal',
              session_id: session.session_id,
              trace_id: traceId,
              err: (err as Error).message,
            });
            return false;
          },
        );
      this.metrics.refusals.inc({ channel: 'console', outcome: recorded ? 'recorded' : 'not_recorded' });
    } else {
      this.metrics.refusals.inc({ channel: 'console', outcome });
    }
  }

  private async withinRefusalBudget(sessionId: string, address: string | null): Promise<boolean> {
    const keys = [`session:${sessionId}`, ...(address === null ? [] : [`address:${address}`])];
    for (const key of keys) {
      const hit = this.recordedRefusals.hit(key, REFUSAL_WINDOW_MS, this.refusalsPerWindow, 0, 'console');
      if (hit.isBlocked) return false;
    }
    return true;
  }

  /** Appends the session's end (once; a session closed already stays as it was). */
  async close(
    session: ConsoleSessionState,
    reason: ConsoleCloseReason,
    traceId: string,
    bytes = { to_client: 0, to_provider: 0 },
  ): Promise<void> {
    await this.sessions.update(
      session.session_id,
      (current) =>
        decideConsoleSession(current, {
          type: 'close',
          reason,
          bytes_to_client: bytes.to_client,
          bytes_to_provider: bytes.to_provider,
        }),
      eventContext(session.opened_by, traceId),
    );
    await this.holds.release(session.session_id);
  }
}
