import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HcpConfig, HcpRole } from '../../config/hcp-config';
import { HCP_CONFIG } from '../tokens';

interface PeriodicTask {
  role: HcpRole;
  name: string;
  intervalMs: number;
  run(): Promise<unknown>;
}

/**
 * The timers of a process (purges, sweeps, probes), registered by their contexts in `onModuleInit` and
 * started once Nest is up, each only where HCP_ROLES include its role. A failing run is logged and the
 * next one runs as planned: no task can stop its timer or the process.
 */
@Injectable()
export class PeriodicTasks implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('background');
  private readonly tasks: PeriodicTask[] = [];
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(@Inject(HCP_CONFIG) private readonly config: HcpConfig) {}

  register(task: PeriodicTask): void {
    this.tasks.push(task);
  }

  onApplicationBootstrap(): void {
    for (const task of this.tasks.filter((t) => this.config.roles.includes(t.role))) {
      const timer = setInterval(() => {
        task.run().catch((err) => this.logger.warn(`${task.name} failed: ${(err as Error).message}`));
      }, task.intervalMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  onApplicationShutdown(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }
}
