import { Context } from './context';
import { takeOverLeftover } from './leftover';
import { identify } from './process-identity';
import { launch } from './server-process';
import { withStartLock } from './start-lock';
import { errorText } from './support';

/** How often the server's pid is checked; a check reads three small /proc files. */
const WATCH_INTERVAL_MS = 1000;
/** Between failed restarts, and before restarting a server that died soon after its last restart. */
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;
/** A server up this long after a restart counts as recovered: its next death is restarted at once. */
const STABLE_AFTER_MS = 60_000;

/**
 * Keeps the server of one data folder running: when its postmaster dies (killed, crashed, OOM), not
 * through stop(), it is started again on the same cluster and port, so the connection strings the
 * application holds stay valid and its pools reconnect. The server need not be a child of this process
 * (it may be a leftover taken over), so the pid is polled rather than waited on. A server of the cluster
 * started meanwhile by another process is taken over rather than fought.
 */
export class ServerSupervisor {
  private stopped = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly watching: Promise<void>;
  private restartCount = 0;

  constructor(
    private readonly ctx: Context,
    private pid: number,
  ) {
    this.watching = this.watch();
  }

  /** Restarts so far, for logs and metrics. */
  get restarts(): number {
    return this.restartCount;
  }

  /** Ends supervision (waiting out a restart in progress) and returns the pid of the server now running. */
  async stop(): Promise<number> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
    await this.watching;
    return this.pid;
  }

  private async watch(): Promise<void> {
    let backoff = 0;
    let upSince = Date.now();
    while (!this.stopped) {
      await this.pause(WATCH_INTERVAL_MS);
      if (this.stopped || (await identify(this.pid, this.ctx.pgdata)) === 'ours') continue;
      if (this.stopped) return;
      if (Date.now() - upSince >= STABLE_AFTER_MS) backoff = 0;
      this.ctx.logger.warn(
        `embedded PostgreSQL (pid ${this.pid}) died; restarting it on port ${this.ctx.port}` +
          (backoff ? ` in ${backoff} ms` : ''),
      );
      while (!this.stopped) {
        if (backoff) await this.pause(backoff);
        if (this.stopped) return;
        backoff = Math.min(Math.max(backoff * 2, FIRST_BACKOFF_MS), MAX_BACKOFF_MS);
        try {
          this.pid = await this.restart();
          this.restartCount++;
          upSince = Date.now();
          this.ctx.logger.warn(
            `embedded PostgreSQL restarted on port ${this.ctx.port} (pid ${this.pid}, restart ${this.restartCount})`,
          );
          break;
        } catch (error) {
          this.ctx.logger.warn(
            `embedded PostgreSQL could not be restarted: ${errorText(error)}; trying again in ${backoff} ms`,
          );
        }
      }
    }
  }

  /**
   * Another process on this data folder (a second HCP) may be restarting the same server: the start
   * lock makes us wait for its launch, and then take its server over rather than start a second one.
   */
  private restart(): Promise<number> {
    return withStartLock(this.ctx.dataDir, async () => (await takeOverLeftover(this.ctx)) ?? (await launch(this.ctx)));
  }

  /** A sleep that stop() cuts short, and that never keeps the process alive on its own. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(resolve, ms);
      this.timer.unref();
    });
  }
}
