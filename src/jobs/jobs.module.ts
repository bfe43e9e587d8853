import { Module, OnModuleInit } from '@nestjs/common';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { JobQueries } from './job.queries';
import { JobRepository } from './job.repository';
import { JobsController } from './jobs.controller';
import { OpsJobsController } from './ops-jobs.controller';
import { JobAdmission } from './queue/job-admission';
import { JobQueue } from './queue/job-queue';
import { JOB_QUEUE_GAUGES_MS, JobQueueGauges } from './queue/job-queue-gauges';
import { JobRecovery } from './recovery/job-recovery';
import { JOB_DEADLINE_SWEEP_MS, JobDeadlineSweep } from './worker/job-deadline-sweep';
import { JobExecutors } from './worker/job-executors';
import { JobRunner } from './worker/job-runner';
import { JobWorkerService } from './worker/job-worker.service';

/**
 * Jobs of any kind: their streams and read model, the lease queue, the worker that runs them through
 * the executor their context registered, the deadline sweep and ops recovery. Nothing here knows what a
 * VM is.
 */
@Module({
  controllers: [JobsController, OpsJobsController],
  providers: [
    JobRepository,
    JobQueries,
    JobQueue,
    JobQueueGauges,
    JobAdmission,
    JobExecutors,
    JobRunner,
    JobWorkerService,
    JobDeadlineSweep,
    JobRecovery,
  ],
  exports: [JobRepository, JobQueue, JobAdmission, JobExecutors],
})
export class JobsModule implements OnModuleInit {
  constructor(
    private readonly tasks: PeriodicTasks,
    private readonly deadlines: JobDeadlineSweep,
    private readonly gauges: JobQueueGauges,
  ) {}

  onModuleInit(): void {
    this.tasks.register({
      role: 'worker',
      name: 'job deadline sweep',
      intervalMs: JOB_DEADLINE_SWEEP_MS,
      run: () => this.deadlines.sweep(),
    });
    this.tasks.register({
      role: 'worker',
      name: 'job queue gauges',
      intervalMs: JOB_QUEUE_GAUGES_MS,
      run: () => this.gauges.record(),
    });
  }
}
