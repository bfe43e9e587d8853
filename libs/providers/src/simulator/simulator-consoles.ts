/**
 * The simulator's open consoles: an in-process RFB server per console, closed when its VM stops or
 * goes away. A stop made through this driver closes them at once; a stop made by another process
 * (the state is shared in PostgreSQL) is noticed by polling the VM while a console is open.
 */
import type { Duplex } from 'node:stream';
import { serveRfb, type RfbServerSession } from '../rfb/rfb-server';

export interface SimulatorConsolesOptions {
  /** Whether the VM still runs; a failed check keeps the console (the state store may be down briefly). */
  isRunning: (hcpId: string) => Promise<boolean>;
  /** How often open consoles check their VM. */
  watchMs: number;
}

export class SimulatorConsoles {
  private readonly open = new Map<string, Set<RfbServerSession>>();
  private watcher: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly options: SimulatorConsolesOptions) {}

  /** Starts an RFB server for the VM on `stream`. */
  serve(hcpId: string, stream: Duplex, password: string, name: string): RfbServerSession {
    const session = serveRfb(stream, { password, name });
    const sessions = this.open.get(hcpId) ?? new Set();
    this.open.set(hcpId, sessions);
    sessions.add(session);
    void session.ended.then(() => this.forget(hcpId, session));
    this.watch();
    return session;
  }

  /** Closes every console of the VM (it stopped or was deleted). */
  closeFor(hcpId: string): void {
    for (const session of this.open.get(hcpId) ?? []) {
      session.close();
      this.forget(hcpId, session);
    }
  }

  count(hcpId?: string): number {
    if (hcpId !== undefined) return this.open.get(hcpId)?.size ?? 0;
    let n = 0;
    for (const sessions of this.open.values()) n += sessions.size;
    return n;
  }

  private forget(hcpId: string, session: RfbServerSession): void {
    const sessions = this.open.get(hcpId);
    sessions?.delete(session);
    if (sessions?.size === 0) this.open.delete(hcpId);
    if (this.open.size === 0 && this.watcher) {
      clearInterval(this.watcher);
      this.watcher = undefined;
    }
  }

  private watch(): void {
    if (this.watcher) return;
    this.watcher = setInterval(() => void this.check(), this.options.watchMs);
    this.watcher.unref();
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      for (const hcpId of [...this.open.keys()]) {
        const running = await this.options.isRunning(hcpId).catch(() => true);
        if (!running) this.closeFor(hcpId);
      }
    } finally {
      this.checking = false;
    }
  }
}
