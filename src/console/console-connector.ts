import { Injectable } from '@nestjs/common';
import type { Duplex } from 'node:stream';
import {
  ConsoleCloseReason,
  ConsoleRefusalReason,
  ConsoleSessionState,
  decideConsoleSession,
  HcpError,
  notFound,
  VmState,
} from '@hcp/domain';
import { connectRfbServer, RfbHandshakeError } from '@hcp/providers';
import { eventContext } from '../platform/event-sourcing/event-context';
import { DriverRegistry } from '../ops';
import { VmRepository } from '../vms';
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
 */
@Injectable()
export class ConsoleConnector {
  constructor(
    private readonly sessions: ConsoleSessionRepository,
    private readonly vms: VmRepository,
    private readonly drivers: DriverRegistry,
  ) {}

  async connect(sessionId: string, token: string, traceId: string): Promise<ConnectedConsole> {
    const { state: opened } = await this.sessions.load(sessionId);
    if (!opened) throw notFound('console session');
    const { state, events } = await this.sessions.update(
      sessionId,
      (current) =>
        decideConsoleSession(current, { type: 'connect', token_sha256: consoleTokenDigest(token), now: new Date() }),
      eventContext(opened.opened_by, traceId),
    );
    const outcome = events[0];
    if (outcome?.type === 'ConsoleSessionRefused')
      throw new HcpError('UNAUTHORIZED', REFUSAL_MESSAGES[outcome.data.reason]);
    const session = state!;

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
  }
}
