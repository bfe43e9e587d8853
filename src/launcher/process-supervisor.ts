import cluster, { Worker } from 'node:cluster';

export interface ChildSpec {
  /** Name in the logs: `api-1`, `worker+projections`. */
  name: string;
  env: Record<string, string>;
  /** Node flags of this child, after the launcher's own (V8 heap settings). */
  nodeFlags?: string[];
}

export interface SupervisorLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface SupervisorOptions {
  logger: SupervisorLogger;
  /** How long the children may take to drain after SIGTERM before they are killed. */
  stopTimeoutMs: number;
  /** Exits in a row before a child ever listened after which the launcher gives up. */
  maxStartFailures?: number;
  /** Backoff of a restart: doubles from `minBackoffMs` for each crash soon after a start, up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** Exit code of main.ts for a configuration error: restarting cannot help. */
const CONFIG_ERROR_EXIT = 2;
/** A child that lived this long before it died starts again at the smallest backoff. */
const STABLE_AFTER_MS = 60_000;

interface Slot {
  spec: ChildSpec;
  worker: Worker | null;
  startedAt: number;
  listened: boolean;
  failuresAtStart: number;
  recentCrashes: number;
  restartTimer: NodeJS.Timeout | null;
}

/**
 * Runs HCP's children as cluster workers (the API children share the port through the primary) and
 * keeps them running: a child that dies is started again after a capped backoff; one that keeps dying
 * before it ever listens ends the launcher with `onGiveUp`. `stop` sends each child SIGTERM (each drains
 * on its own) and resolves once all have exited, killing those that overrun the timeout.
 */
export class ProcessSupervisor {
  private readonly slots: Slot[] = [];
  private stopping: Promise<void> | null = null;
  private readonly maxStartFailures: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(
    private readonly options: SupervisorOptions,
    private readonly onGiveUp: (reason: string) => void,
  ) {
    this.maxStartFailures = options.maxStartFailures ?? 5;
    this.minBackoffMs = options.minBackoffMs ?? 500;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    cluster.on('exit', (worker, code, signal) => this.exited(worker, code, signal));
    cluster.on('listening', (worker) => {
      const slot = this.slotOf(worker);
      if (slot && !slot.listened) {
        slot.listened = true;
        slot.failuresAtStart = 0;
      }
    });
  }

  /** Starts a child and resolves when it listens (it finished its start: migrations seen, catalog seeded). */
  start(spec: ChildSpec): Promise<void> {
    const slot: Slot = {
      spec,
      worker: null,
      startedAt: 0,
      listened: false,
      failuresAtStart: 0,
      recentCrashes: 0,
      restartTimer: null,
    };
    this.slots.push(slot);
    this.fork(slot);
    return new Promise((resolve, reject) => {
      const onListening = (worker: Worker) => {
        if (this.slotOf(worker) !== slot) return;
        cluster.off('listening', onListening);
        resolve();
      };
      cluster.on('listening', onListening);
      const giveUpCheck = setInterval(() => {
        if (this.stopping) {
          clearInterval(giveUpCheck);
          cluster.off('listening', onListening);
          reject(new Error(`${spec.name} did not start`));
        } else if (slot.listened) clearInterval(giveUpCheck);
      }, 200);
    });
  }

  /** Process ids of the running children, by name. */
  pids(): Array<{ name: string; pid: number }> {
    return this.slots.flatMap((s) => (s.worker?.process.pid ? [{ name: s.spec.name, pid: s.worker.process.pid }] : []));
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    const live = this.slots.flatMap((s) => {
      if (s.restartTimer) clearTimeout(s.restartTimer);
      return s.worker && !s.worker.isDead() ? [s.worker] : [];
    });
    const exits = live.map((w) => new Promise<void>((resolve) => w.once('exit', () => resolve())));
    for (const worker of live) worker.process.kill('SIGTERM');
    const killer = setTimeout(() => {
      for (const worker of live) {
        if (worker.isDead()) continue;
        this.options.logger.error(
          `${this.nameOf(worker)} (pid ${worker.process.pid}) did not stop in time: killing it`,
        );
        worker.process.kill('SIGKILL');
      }
    }, this.options.stopTimeoutMs);
    await Promise.all(exits);
    clearTimeout(killer);
  }

  private fork(slot: Slot): void {
    slot.restartTimer = null;
    slot.listened = false;
    slot.startedAt = Date.now();
    cluster.setupPrimary({ execArgv: [...process.execArgv, ...(slot.spec.nodeFlags ?? [])] });
    slot.worker = cluster.fork({ ...slot.spec.env, HCP_CHILD_NAME: slot.spec.name });
    this.options.logger.log(`${slot.spec.name} started (pid ${slot.worker.process.pid})`);
  }

  private exited(worker: Worker, code: number | null, signal: string | null): void {
    const slot = this.slotOf(worker);
    if (!slot || this.stopping) return;
    slot.worker = null;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (!slot.listened) {
      slot.failuresAtStart += 1;
      if (code === CONFIG_ERROR_EXIT || slot.failuresAtStart >= this.maxStartFailures) {
        this.onGiveUp(
          `${slot.spec.name} exited with ${how} before it started, ${slot.failuresAtStart} time(s) in a row: giving up`,
        );
        return;
      }
    }
    slot.recentCrashes = Date.now() - slot.startedAt > STABLE_AFTER_MS ? 0 : slot.recentCrashes + 1;
    const backoff = Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** Math.max(0, slot.recentCrashes - 1));
    this.options.logger.warn(
      `${slot.spec.name} (pid ${worker.process.pid}) exited with ${how}: restarting in ${backoff} ms`,
    );
    slot.restartTimer = setTimeout(() => this.fork(slot), backoff);
  }

  private slotOf(worker: Worker): Slot | undefined {
    return this.slots.find((s) => s.worker === worker);
  }

  private nameOf(worker: Worker): string {
    return this.slots.find((s) => s.worker === worker)?.spec.name ?? 'child';
  }
}
