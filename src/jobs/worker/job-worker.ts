import { Logger } from '@nestjs/common';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { JobPolicy, JobRunner, WorkerStopping } from './job-runner';
import { JobQueue, LeasedJob } from '../queue/job-queue';
import { GroupedCalls } from '../../platform/persistence/grouped-calls';

export interface JobWorkerOptions extends JobPolicy {
  leaseMs: number;
  concurrency: number;
  pollMs: number;
}

/**
 * Leases due jobs and runs them, at most `concurrency` at once. While jobs run their leases are renewed
 * together (one statement) every third of a lease; a job whose lease a renewal finds gone has its driver
 * call aborted and is left to its new holder. Jobs that finish together are marked done together.
 * Nothing lives only in this object: kill the process and another worker (or this one restarted) picks
 * every unfinished job up once its lease expires; stop it and it gives its unfinished jobs back at once
 * instead.
 */
export class JobWorker {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly logger = new Logger('job-worker');
  private readonly running = new Map<string, { done: Promise<void>; abort: AbortController }>();
  private stopped = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private renewal: NodeJS.Timeout | null = null;
  private readonly completions: GroupedCalls<string>;

  constructor(
    private readonly queue: JobQueue,
    private readonly runner: JobRunner,
    private readonly options: JobWorkerOptions,
  ) {
    this.completions = new GroupedCalls((jobIds) => this.queue.completeMany(jobIds, this.id));
  }

  start(): void {
    this.renewal ??= setInterval(() => void this.renewLeases(), Math.max(100, Math.floor(this.options.leaseMs / 3)));
    // The leasing loop keeps the process alive while the worker runs; the timer alone must not.
    this.renewal.unref();
    this.loop ??= this.run();
  }

  /** Wakes an idle worker now (a job became due); harmless when busy. */
  notify(): void {
    this.wake?.();
  }

  /**
   * Stops leasing, lets running jobs finish for `finishMs`, then gives the rest back: their driver calls
   * are aborted (WorkerStopping), the runner records JobAttemptReleased (the attempt does not count) and
   * their rows become due at once for another worker. Returns within `graceMs` in all; a job whose call
   * ignores the abort keeps its lease and is taken over when the lease expires, as after a crash.
   */
  async stop(graceMs = 10_000, finishMs = graceMs / 2): Promise<void> {
    const until = Date.now() + graceMs;
    this.stopped = true;
    this.notify();
    await within(this.loop ?? Promise.resolve(), until - Date.now());
    await within(this.allRunning(), Math.min(finishMs, until - Date.now()));
    if (this.running.size > 0)
      this.logger.log(`stopping: giving ${this.running.size} unfinished job(s) back to the queue`);
    for (const { abort } of this.running.values()) abort.abort(new WorkerStopping());
    await within(this.allRunning(), until - Date.now());
    if (this.running.size > 0)
      this.logger.warn(`stopped with ${this.running.size} job(s) still leased: they resume when their lease expires`);
    if (this.renewal) clearInterval(this.renewal);
  }

  private async renewLeases(): Promise<void> {
    const ids = [...this.running.keys()];
    if (ids.length === 0) return;
    try {
      const held = await this.queue.renewMany(ids, this.id, this.options.leaseMs);
      for (const id of ids) {
        const abort = this.running.get(id)?.abort;
        if (!held.has(id) && abort && !abort.signal.aborted) abort.abort();
      }
    } catch (err) {
      this.logger.warn(`lease renewal of ${ids.length} job(s) failed: ${(err as Error).message}`);
    }
  }

  private allRunning(): Promise<unknown> {
    return Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const free = this.options.concurrency - this.running.size;
      let leased: LeasedJob[] = [];
      if (free > 0) {
        try {
          leased = await this.queue.lease(this.id, this.options.leaseMs, free);
        } catch (err) {
          this.logger.warn(`leasing failed: ${(err as Error).message}`);
        }
      }
      if (this.stopped) {
        // Leased while the stop began: never started, so the rows go straight back.
        await Promise.allSettled(leased.map((job) => this.queue.release(job.job_id, this.id)));
        break;
      }
      for (const job of leased) {
        const abort = new AbortController();
        const done = this.runJob(job, abort).finally(() => {
          this.running.delete(job.job_id);
          this.notify();
        });
        this.running.set(job.job_id, { done, abort });
      }
      // A full batch may mean more are due: look again at once. Otherwise sleep until woken or polled.
      if (leased.length === 0 || leased.length < free) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), this.options.pollMs);
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      this.wake = done;
    });
  }

  private async runJob(job: LeasedJob, abort: AbortController): Promise<void> {
    try {
      const result = await this.runner.run(job, this.id, this.options, abort.signal);
      if (result.kind === 'finished') await this.completions.call(job.job_id);
      else if (result.kind === 'retry') await this.queue.requeue(job.job_id, this.id, result.at);
      else if (result.kind === 'released') await this.queue.release(job.job_id, this.id);
      else this.logger.warn(`job ${job.job_id}: lease lost while running; left to its new holder`);
    } catch (err) {
      // Events could not be written (store down, concurrent holder): keep the lease until it expires
      // so the job is retried from its recorded state, never dropped.
      this.logger.error(`job ${job.job_id}: ${(err as Error).message}`);
    }
  }
}

/** Waits for `work`, at most `ms` (never rejects: a failure is the work's own to report). */
function within(work: Promise<unknown>, ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
