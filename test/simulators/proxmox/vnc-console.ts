/**
 * The console part of the Proxmox simulator: what `vncproxy` hands out and what `vncwebsocket`
 * accepts. A grant is a fresh `PVEVNC:` ticket bound to the calling user (the token-suffixed user for
 * API tokens), the node that issued it, the VMID and a port from 5900-5999; it is valid from 20 s
 * before to 40 s after issue and only once. Its vncproxy task waits for the websocket (10 s, like
 * Proxmox's worker) and ends `OK` when the connection closes, or `connection timed out`. Behind the
 * websocket runs an RFB server asking for VNC authentication with the grant's generated password
 * (PVE 9), or with the ticket when none was generated (older PVE; VNC uses its first 8 bytes).
 */
import { randomBytes } from 'node:crypto';
import { createWebSocketStream, type WebSocket } from 'ws';
import { serveRfb, type RfbServerSession } from '@hcp/providers';

export interface VncGrant {
  ticket: string;
  /** The VNC password vncproxy answered; undefined when the ticket is the password. */
  password?: string;
  user: string;
  node: string;
  vmid: number;
  port: number;
  issuedAt: number;
  used: boolean;
  /** Ends the grant's vncproxy task with this exit status. */
  endTask: (exit: string) => void;
  waitTimer?: NodeJS.Timeout;
  connection?: { ws: WebSocket; session: RfbServerSession };
  ended: boolean;
}

export interface SimVncConsolesOptions {
  /** How long the vncproxy task waits for the websocket. Proxmox: 10 s. */
  connectWaitMs: number;
  desktopName: (vmid: number) => string;
}

const FIRST_PORT = 5900;
const LAST_PORT = 5999;
const VALID_BEFORE_MS = 20_000;
const VALID_AFTER_MS = 40_000;

export class SimVncConsoles {
  private readonly grants = new Map<string, VncGrant>();

  constructor(private readonly options: SimVncConsolesOptions) {}

  /** A new grant; undefined when every port of the node is taken. */
  issue(
    user: string,
    node: string,
    vmid: number,
    password: string | undefined,
    endTask: (exit: string) => void,
  ): VncGrant | undefined {
    const taken = new Set([...this.grants.values()].filter((g) => g.node === node && !g.ended).map((g) => g.port));
    let port = FIRST_PORT;
    while (port <= LAST_PORT && taken.has(port)) port++;
    if (port > LAST_PORT) return undefined;
    const issuedAt = Date.now();
    const ticket = `PVEVNC:${Math.floor(issuedAt / 1000)
      .toString(16)
      .toUpperCase()
      .padStart(8, '0')}::${randomBytes(32).toString('base64')}`;
    const grant: VncGrant = { ticket, password, user, node, vmid, port, issuedAt, used: false, endTask, ended: false };
    grant.waitTimer = setTimeout(() => this.end(grant, 'connection timed out'), this.options.connectWaitMs);
    this.grants.set(ticket, grant);
    return grant;
  }

  /** The grant this websocket request may use, consuming it; undefined when the ticket does not open it. */
  redeem(ticket: string, user: string, node: string, vmid: number, port: number): VncGrant | undefined {
    const grant = this.grants.get(ticket);
    if (!grant || grant.used || grant.ended) return undefined;
    // The port is a socket on the node that ran vncproxy: another node has nothing listening there.
    if (grant.user !== user || grant.node !== node || grant.vmid !== vmid || grant.port !== port) return undefined;
    const now = Date.now();
    if (now < grant.issuedAt - VALID_BEFORE_MS || now > grant.issuedAt + VALID_AFTER_MS) return undefined;
    grant.used = true;
    clearTimeout(grant.waitTimer);
    return grant;
  }

  /** Serves RFB over the accepted websocket until either side closes it. */
  attach(grant: VncGrant, ws: WebSocket): void {
    const stream = createWebSocketStream(ws);
    const session = serveRfb(stream, {
      password: grant.password ?? grant.ticket,
      name: this.options.desktopName(grant.vmid),
    });
    grant.connection = { ws, session };
    void session.ended.then(() => this.end(grant, 'OK'));
  }

  /** Closes the consoles of a VM that stopped or was destroyed. */
  closeForVm(vmid: number): void {
    for (const grant of this.grants.values()) {
      if (grant.vmid !== vmid || grant.ended) continue;
      if (grant.connection) grant.connection.ws.close(1000, 'VM stopped');
      this.end(grant, grant.connection ? 'OK' : 'connection timed out');
    }
  }

  closeAll(): void {
    for (const grant of this.grants.values()) {
      grant.connection?.ws.terminate();
      this.end(grant, 'OK');
    }
  }

  /** Websocket connections still open (of one VM, or all). */
  openConnections(vmid?: number): number {
    return [...this.grants.values()].filter((g) => !g.ended && g.connection && (vmid === undefined || g.vmid === vmid))
      .length;
  }

  /** Tickets issued so far, newest last (tests check none leaks into errors). */
  tickets(): string[] {
    return [...this.grants.keys()];
  }

  /** VNC passwords answered so far (tests check none leaks). */
  passwords(): string[] {
    return [...this.grants.values()].flatMap((g) => (g.password ? [g.password] : []));
  }

  /** Moves every grant's issue time `ms` into the past (negative: into the future), to test the validity window. */
  backdate(ms: number): void {
    for (const grant of this.grants.values()) grant.issuedAt -= ms;
  }

  private end(grant: VncGrant, exit: string): void {
    if (grant.ended) return;
    grant.ended = true;
    clearTimeout(grant.waitTimer);
    grant.endTask(exit);
    // Ended grants are kept a while so a reused ticket is recognised as used, then dropped.
    if (this.grants.size > 500) {
      for (const [ticket, g] of this.grants)
        if (g.ended && Date.now() - g.issuedAt > VALID_AFTER_MS) this.grants.delete(ticket);
    }
  }
}
