import { Module } from '@nestjs/common';
import { JobQueries } from './job.queries';
import { JobRepository } from './job.repository';
import { JobsController } from './jobs.controller';
import { OpsJobsController } from './ops-jobs.controller';
import { JobAdmission } from './queue/job-admission';
import { JobQueue } from './queue/job-queue';
import { JobExecutors } from './worker/job-executors';
import { JobRunner } from './worker/job-runner';
import { JobWorkerService } from './worker/job-worker.service';

/**
 * Jobs of any kind: their streams and read model, the lease queue, and the worker that runs them through
 * the executor their context registered. Nothing here knows what a VM is.
 */
@Module({
  controllers: [JobsController, OpsJobsController],
  providers: [JobRepository, JobQueries, JobQueue, JobAdmission, JobExecutors, JobRunner, JobWorkerService],
  exports: [JobRepository, JobQueue, JobAdmission, JobExecutors],
})
export class JobsModule {}
