import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { ConsoleCloseReason, ConsoleSessionState } from '@hcp/domain';

/** Websocket close codes the client sees, per reason (4000-4999 are the application's own). */
const CLOSE_CODES: Record<ConsoleCloseReason, number> = {
  client_closed: 1000,
  provider_closed: 1000,
  session_expired: 4001,
  vm_not_running: 4002,
  provider_failed: 1011,
  instance_stopped: 1001,
  instance_lost: 1001,
};

export interface RelayEnd {
  reason: ConsoleCloseReason;
  bytes: { to_client: number; to_provider: number };
}

/**
 * One connected console: bytes both ways between the tenant's websocket and the provider's RFB stream
 * (both past their RFB handshakes), until either side goes or HCP ends it. It ends once, with the
 * first reason, and reports how much it relayed.
 */
export class ConsoleRelay {
  private readonly bytes = { to_client: 0, to_provider: 0 };
  private ended: ConsoleCloseReason | null = null;
  readonly done: Promise<RelayEnd>;
  private finish!: (end: RelayEnd) => void;

  constructor(
    readonly session: ConsoleSessionState,
    readonly traceId: string,
    private readonly ws: WebSocket,
    client: Duplex,
    private readonly provider: Duplex,
  ) {
    this.done = new Promise((resolve) => (this.finish = resolve));
    client.on('data', (chunk: Buffer) => (this.bytes.to_provider += chunk.length));
    provider.on('data', (chunk: Buffer) => (this.bytes.to_client += chunk.length));
    // `end: false`: one side ending must not half-close the other; end() closes both with the reason.
    client.pipe(provider, { end: false });
    provider.pipe(client, { end: false });
    for (const event of ['end', 'close', 'error'] as const) {
      client.on(event, () => this.end('client_closed'));
      provider.on(event, () => this.end('provider_closed'));
    }
  }

  get endsBy(): number {
    return Date.parse(this.session.ends_by ?? '') || 0;
  }

  end(reason: ConsoleCloseReason): void {
    if (this.ended) return;
    this.ended = reason;
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(CLOSE_CODES[reason], reason);
    // Give the close frame a moment on the wire before the socket goes.
    setTimeout(() => this.ws.terminate(), 1_000).unref();
    this.provider.destroy();
    this.finish({ reason, bytes: { ...this.bytes } });
  }
}
