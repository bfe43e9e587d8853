import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { createWebSocketStream, WebSocket, WebSocketServer } from 'ws';
import { HcpError } from '@hcp/domain';
import { acceptRfbClient } from '@hcp/providers';
import { toTaxonomyError } from '../http/errors/error-envelope';
import { traceIdFromHeaders } from '../http/request/request-id';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { VmRepository } from '../vms';
import { CONSOLE_KEEPS_VM_STATUSES, ConnectedConsole, ConsoleConnector } from './console-connector';
import { ConsoleRelay } from './console-relay';
import { ConsoleSessionHolds } from './console-session-holds';
import { consoleOriginsOf, isAllowedConsoleOrigin, sessionIdOfWebsocketPath } from './console-urls';
import { HcpConfig } from '../config/hcp-config';
import { HCP_CONFIG } from '../platform/tokens';

const CLIENT_HANDSHAKE_MS = 10_000;
const WATCH_INTERVAL_MS = 1_000;
/** RFB client messages are small; a huge frame is not a console client. */
const MAX_CLIENT_FRAME_BYTES = 1 << 20;

/**
 * HCP's console proxy endpoint: websocket upgrades of `/v1/console/{session_id}/websocket?token=...`.
 * The token is the credential (browsers cannot send bearer headers on websockets), checked once through
 * the session's events, so any HCP instance can serve it. Toward the tenant HCP speaks RFB with security
 * None; the provider's password or ticket stays inside the connector. Connected consoles close at their
 * maximum length, when their VM stops or goes, and when this instance shuts down.
 */
@Injectable()
export class ConsoleGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('console');
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: MAX_CLIENT_FRAME_BYTES,
    // noVNC and websockify clients ask for `binary`; clients that ask for nothing get nothing.
    handleProtocols: (protocols) => (protocols.has('binary') ? 'binary' : false),
  });
  private readonly relays = new Map<string, { relay: ConsoleRelay; closed: Promise<void> }>();
  private watch: NodeJS.Timeout | undefined;
  private watching = false;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly connector: ConsoleConnector,
    private readonly vms: VmRepository,
    private readonly metrics: HcpMetrics,
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    private readonly holds: ConsoleSessionHolds,
  ) {}

  /**
   * Renews the holds of the consoles this instance relays. A console whose hold is gone was taken for
   * the console of a dead instance (this one did not renew in time) and closed by the sweeper: its relay
   * ends too, so no console runs on a session its record says is closed.
   */
  async renewHolds(): Promise<void> {
    const relaying = [...this.relays.keys()];
    const held = await this.holds.renew(relaying);
    for (const sessionId of relaying) {
      if (!held.has(sessionId)) this.relays.get(sessionId)?.relay.end('instance_lost');
    }
  }

  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter.getHttpServer();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.upgrade(req, socket, head));
    this.watch = setInterval(() => void this.watchRelays(), WATCH_INTERVAL_MS);
    this.watch.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.watch);
    for (const { relay } of this.relays.values()) relay.end('instance_stopped');
    await Promise.all([...this.relays.values()].map((r) => r.closed));
    this.wss.close();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const traceId = traceIdFromHeaders(req.headers);
    const url = new URL(req.url ?? '/', 'http://hcp.invalid');
    const sessionId = sessionIdOfWebsocketPath(url.pathname);
    if (!sessionId) return refuse(socket, new HcpError('NOT_FOUND', 'no such resource'), traceId);
    // Checked before the token is spent: ws would refuse such a handshake only after we connected.
    if (!isWebSocketHandshake(req))
      return refuse(
        socket,
        new HcpError('INVALID_REQUEST', 'a websocket handshake (version 13, with a key) is required'),
        traceId,
      );
    // A browser page on another site must not drive a console with a token it got hold of; checked
    // before the token is spent. Clients that send no Origin are not browsers and are not affected.
    const origin = req.headers.origin;
    if (origin !== undefined && !isAllowedConsoleOrigin(consoleOriginsOf(this.config), origin))
      return refuse(socket, new HcpError('FORBIDDEN', 'consoles are not served to this Origin'), traceId);
    let connected: ConnectedConsole;
    try {
      // The socket's peer, as the API's req.ip is without a trusted proxy: who is refused, if refused.
      const clientAddress = req.socket.remoteAddress ?? null;
      connected = await this.connector.connect(sessionId, url.searchParams.get('token') ?? '', traceId, clientAddress);
    } catch (err) {
      const error = toTaxonomyError(err);
      this.metrics.consoleConnections.inc({ outcome: error.code });
      this.logger.warn({
        msg: 'console connection refused',
        session_id: sessionId,
        code: error.code,
        trace_id: traceId,
      });
      return refuse(socket, error, traceId);
    }
    if (socket.destroyed) return void this.closeUnstarted(connected, 'client_closed');
    this.wss.handleUpgrade(req, socket, head, (ws) => void this.relay(connected, ws));
  }

  private async relay(connected: ConnectedConsole, ws: WebSocket): Promise<void> {
    const client = createWebSocketStream(ws);
    client.on('error', () => client.destroy());
    try {
      await acceptRfbClient(client, { timeoutMs: CLIENT_HANDSHAKE_MS });
    } catch {
      ws.terminate();
      return this.closeUnstarted(connected, 'client_closed');
    }
    const { session, traceId } = connected;
    const relay = new ConsoleRelay(session, traceId, ws, client, connected.provider);
    this.metrics.consoleConnections.inc({ outcome: 'connected' });
    this.metrics.consolesOpen.inc();
    this.logger.log({
      msg: 'console connected',
      session_id: session.session_id,
      vm_id: session.vm_id,
      type: session.type,
      trace_id: traceId,
    });
    const closed = relay.done.then(async ({ reason, bytes }) => {
      this.metrics.consolesOpen.dec();
      this.relays.delete(session.session_id);
      this.logger.log({ msg: 'console closed', session_id: session.session_id, reason, ...bytes, trace_id: traceId });
      await this.connector.close(session, reason, traceId, bytes).catch((err: unknown) => {
        this.logger.error({
          msg: 'could not record the end of a console session',
          session_id: session.session_id,
          err: (err as Error).message,
        });
      });
    });
    this.relays.set(session.session_id, { relay, closed });
  }

  private async closeUnstarted(connected: ConnectedConsole, reason: 'client_closed'): Promise<void> {
    connected.provider.destroy();
    await this.connector.close(connected.session, reason, connected.traceId).catch(() => undefined);
  }

  /** Ends consoles past their maximum length or whose VM is no longer running. */
  private async watchRelays(): Promise<void> {
    if (this.watching) return;
    this.watching = true;
    try {
      for (const { relay } of [...this.relays.values()]) {
        if (Date.now() >= relay.endsBy) {
          relay.end('session_expired');
          continue;
        }
        const { state: vm } = await this.vms.load(relay.session.vm_id).catch(() => ({ state: undefined }));
        if (vm === undefined) continue; // the store did not answer: look again next round
        if (!vm || !CONSOLE_KEEPS_VM_STATUSES.has(vm.status)) relay.end('vm_not_running');
      }
    } finally {
      this.watching = false;
    }
  }
}

/** RFC 6455's opening handshake, as `ws` will insist on it. */
function isWebSocketHandshake(req: IncomingMessage): boolean {
  const key = req.headers['sec-websocket-key'];
  return (
    req.method === 'GET' &&
    req.headers.upgrade?.toLowerCase() === 'websocket' &&
    req.headers['sec-websocket-version'] === '13' &&
    typeof key === 'string' &&
    /^[A-Za-z0-9+/]{22}==$/.test(key)
  );
}

/** Answers a refused upgrade with the error envelope, as an HTTP response on the raw socket. */
function refuse(socket: Duplex, error: HcpError, traceId: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({
    error: {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
      trace_id: traceId,
    },
  });
  const status = error.httpStatus;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${traceId}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
  );
}
