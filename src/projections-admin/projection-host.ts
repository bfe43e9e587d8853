import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ProjectionRunner } from '@hcp/projections/runner/projection-runner';
import { HCP_CONFIG, HCP_RUNTIME } from '../platform/tokens';
import { HcpConfig } from '../config/hcp-config';
import { JobDispatcherProjection } from '../vms/jobs/vm-job-dispatcher.projection';
import { JobQueue } from '../jobs/queue/job-queue';
import { JobQueueListener } from '../jobs/queue/job-queue.listener';
import { JobRepository } from '../jobs/job.repository';
import { JobWorker } from '../jobs/worker/job-worker';
import { VmJobExecutor } from '../vms/jobs/vm-job.executor';
import { IdempotencyStore } from '../http/idempotency/idempotency-store';
import { QuotaReleaseProjection } from '../quotas/quota-release.projection';
import { QuotaService } from '../quotas/quota.service';
import { QuotaSweeper } from '../vms/quota-sweeper';
import { createPublisher, MessagePublisher } from '@hcp/messaging';
import { publisherSinks } from '@hcp/projections/audit/audit-sink';
import { readModelProjections } from '@hcp/projections/read-models';
import { ProviderHealthService } from '../ops/drivers/provider-health';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { HcpRuntime } from '../platform/runtime/hcp-runtime';

const IDEMPOTENCY_PURGE_MS = 10 * 60_000;
const LAG_PROBE_MS = 5000;
const QUOTA_SWEEP_MS = 5 * 60_000;

/**
 * The long-running parts of a process, chosen by HCP_ROLES: projection runners (one active instance per
 * projection across all processes) and the job worker. Started after Nest is up, stopped before it
 * closes its connections.
 */
@Injectable()
export class BackgroundProcesses implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('background');
  readonly projections: ProjectionRunner[] = [];
  private worker: JobWorker | null = null;
  private listener: JobQueueListener | null = null;
  private purge: NodeJS.Timeout | null = null;
  private healthProbe: NodeJS.Timeout | null = null;
  private lagProbe: NodeJS.Timeout | null = null;
  private sweep: NodeJS.Timeout | null = null;
  private publisher: MessagePublisher | null = null;

  constructor(
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    @Inject(HCP_RUNTIME) private readonly runtime: HcpRuntime,
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly executor: VmJobExecutor,
    private readonly idempotency: IdempotencyStore,
    private readonly providerHealth: ProviderHealthService,
    private readonly quotas: QuotaService,
    private readonly metrics: HcpMetrics,
    private readonly quotaSweeper: QuotaSweeper,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { dataSource, eventStore, codec, pool } = this.runtime;
    if (this.config.roles.includes('api')) {
      // Every API process purges; the DELETE is idempotent, so running it in several is harmless.
      this.purge = setInterval(() => {
        this.idempotency.purgeExpired().catch((err) => this.logger.warn(`purging idempotency keys failed: ${(err as Error).message}`));
      }, IDEMPOTENCY_PURGE_MS);
      this.purge.unref();
    }
    if (this.config.roles.includes('projections')) {
      const projections = [
        ...readModelProjections(publisherSinks(await this.openPublisher())),
        new JobDispatcherProjection(this.jobs, this.queue),
        new QuotaReleaseProjection(this.quotas),
      ];
      for (const projection of projections) {
        const runner = new ProjectionRunner(dataSource, eventStore, codec, projection);
        runner.start();
        this.projections.push(runner);
      }
      this.lagProbe = setInterval(() => void this.recordLag(), LAG_PROBE_MS);
      this.lagProbe.unref();
    }
    if (this.config.roles.includes('worker')) {
      const { jobs } = this.config;
      const worker = new JobWorker(this.queue, this.executor, {
        leaseMs: jobs.leaseMs,
        concurrency: jobs.workerConcurrency,
        pollMs: jobs.pollMs,
        maxAttempts: jobs.maxAttempts,
        retryBackoffMs: jobs.retryBackoffMs,
        attemptTimeoutMs: jobs.attemptTimeoutMs,
      });
      this.listener = new JobQueueListener(pool, () => worker.notify());
      await this.listener.start();
      worker.start();
      this.worker = worker;
      this.healthProbe = setInterval(() => void this.providerHealth.checkAll(), this.config.providerHealthIntervalMs);
      this.healthProbe.unref();
      this.sweep = setInterval(() => {
        this.quotaSweeper.sweep().catch((err) => this.logger.warn(`quota sweep failed: ${(err as Error).message}`));
      }, QUOTA_SWEEP_MS);
      this.sweep.unref();
      this.logger.log(`job worker ${worker.id} started`);
    }
  }

  /**
   * Kafka when brokers are configured (topics created if missing), else the log; either way audit and
   * metering stay queryable through the API.
   */
  private async openPublisher(): Promise<MessagePublisher> {
    const logger = new Logger('messaging');
    const publisher = createPublisher(this.config.messaging, {
      logger: {
        debug: (fields, msg) => logger.debug({ ...fields, msg }),
        info: (fields, msg) => logger.log({ ...fields, msg }),
        warn: (fields, msg) => logger.warn({ ...fields, msg }),
        error: (fields, msg) => logger.error({ ...fields, msg }),
      },
      onPublish: (o) => {
        if (o.outcome === 'failed') this.metrics.publishFailures.inc({ sink: o.topic });
      },
    });
    await publisher.connect();
    if (publisher.kind === 'kafka') await publisher.ensureTopics();
    this.publisher = publisher;
    return publisher;
  }

  /** Position and lag of the projections this process runs actively, for /metrics. */
  private async recordLag(): Promise<void> {
    const head = await this.runtime.eventStore.headPosition().catch(() => null);
    for (const runner of this.projections) {
      const { name, active, position } = runner.status();
      if (!active) continue;
      this.metrics.projectionPosition.set({ projection: name }, Number(position));
      if (head !== null) this.metrics.projectionLag.set({ projection: name }, Number(head > position ? head - position : 0n));
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.lagProbe) clearInterval(this.lagProbe);
    if (this.sweep) clearInterval(this.sweep);
    if (this.purge) clearInterval(this.purge);
    if (this.healthProbe) clearInterval(this.healthProbe);
    await this.listener?.stop();
    await this.worker?.stop();
    await Promise.all(this.projections.map((p) => p.stop()));
    await this.publisher?.disconnect();
  }
}
