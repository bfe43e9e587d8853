import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { HcpConfig, HcpRole } from '../../config/hcp-config';
import { HCP_CONFIG } from '../tokens';

interface PeriodicTask {
  role: HcpRole;
  name: string;
  intervalMs: number;
  run(): Promise<unknown>;
}

/** How long a stop waits for runs in flight to finish before it closes the database under them. */
export const RUNS_IN_FLIGHT_WAIT_MS = 3000;

/**
 * The timers of a process (purges, sweeps, probes), registered by their contexts in `onModuleInit` and
 * started once Nest is up, each only where HCP_ROLES include its role. A failing run is logged and the
 * next one runs as planned: no task can stop its timer or the process. A run still going when its next
 * tick comes is not doubled. On shutdown the timers stop first; runs in flight get a short while to
 * finish, and a run that does not is left behind rather than holding the process.
 */
@Injectable()
export class PeriodicTasks implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger('background');
  private readonly tasks: PeriodicTask[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<void>>();

  constructor(@Inject(HCP_CONFIG) private readonly config: HcpConfig) {}

  register(task: PeriodicTask): void {
    this.tasks.push(task);
  }

  onApplicationBootstrap(): void {
    for (const task of this.tasks.filter((t) => this.config.roles.includes(t.role))) {
      const timer = setInterval(() => this.runOnce(task), task.intervalMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  onModuleDestroy(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), RUNS_IN_FLIGHT_WAIT_MS);
      timer.unref();
    });
    const outcome = await Promise.race([Promise.all(this.running.values()), waited]);
    clearTimeout(timer);
    if (outcome === 'late')
      this.logger.warn(`stopping without waiting for: ${[...this.running.keys()].join(', ')} (still running)`);
  }

  private runOnce(task: PeriodicTask): void {
    if (this.running.has(task.name)) return;
    const run = Promise.resolve()
      .then(() => task.run())
      .then(
        () => undefined,
        (err: unknown) => this.logger.warn(`${task.name} failed: ${(err as Error).message}`),
      )
      .finally(() => this.running.delete(task.name));
    this.running.set(task.name, run);
  }
}
