// The jobs context as other contexts see it: open a job, run a kind of job.
export { JobsModule } from './jobs.module';
export type { JobAccepted } from './job-accepted';
export { JobRepository } from './job.repository';
export { JobAdmission, type JobOpening } from './queue/job-admission';
export { JobQueue, queuedJobOf } from './queue/job-queue';
export { dispatchContextOf, queueMissingJobs, type DispatchedJob } from './queue/job-dispatch';
export {
  JOB_WORKER_ACTOR,
  type JobAttempt,
  type JobClosing,
  type JobExecutor,
  type JobWork,
} from './worker/job-executor';
export { JobExecutors } from './worker/job-executors';
