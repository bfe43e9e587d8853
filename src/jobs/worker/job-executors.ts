import { Injectable } from '@nestjs/common';
import { JobExecutor } from './job-executor';

/** The kind of a job type: what comes before its dot (`vm` for `vm.create`). */
export const jobKindOf = (type: string): string => type.split('.', 1)[0]!;

/**
 * Which executor runs which kind of job. Each context registers its executors while the application
 * starts (in its module's `onModuleInit`), before any worker leases a job.
 */
@Injectable()
export class JobExecutors {
  private readonly byKind = new Map<string, JobExecutor>();

  /** `kind` is a job kind (`vm`) or one whole job type (`vm.reconcile`), which wins over its kind. */
  register(kind: string, executor: JobExecutor): void {
    // Two contexts claiming one kind is a wiring mistake: refuse to start rather than run the wrong one.
    if (this.byKind.has(kind)) throw new Error(`an executor for "${kind}" jobs is registered already`);
    this.byKind.set(kind, executor);
  }

  for(type: string): JobExecutor | null {
    return this.byKind.get(type) ?? this.byKind.get(jobKindOf(type)) ?? null;
  }
}
