import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { jobReadModelProjection } from '@hcp/projections/job-read-model/job-read-model.projection';
import { ProjectionRunner } from '@hcp/projections/runner/projection-runner';
import { ClusterUsageProjection } from '@hcp/projections/cluster-usage/cluster-usage.projection';
import { OpsCatalogProjection } from '@hcp/projections/ops-catalog/ops-catalog.projection';
import { vmReadModelProjection } from '@hcp/projections/vm-read-model/vm-read-model.projection';
import { HCP_CONFIG, HCP_RUNTIME } from '../eventing/tokens';
import { HcpConfig } from '../config/hcp-config';
import { JobDispatcherProjection } from '../jobs/job-dispatcher.projection';
import { JobQueue } from '../jobs/job-queue';
import { JobQueueListener } from '../jobs/job-queue.listener';
import { JobRepository } from '../jobs/job.repository';
import { JobWorker } from '../jobs/job-worker';
import { VmJobExecutor } from '../jobs/vm-job.executor';
import { IdempotencyStore } from '../idempotency/idempotency-store';
import { quotaReadModelProjection } from '@hcp/projections/quota-read-model/quota-read-model.projection';
import { QuotaReleaseProjection } from '../quotas/quota-release.projection';
import { QuotaService } from '../quotas/quota.service';
import { AuditProjection } from '@hcp/projections/audit/audit.projection';
import { LogSink } from '@hcp/projections/audit/audit-sink';
import { MeteringProjection } from '@hcp/projections/metering/metering.projection';
import { ProviderHealthService } from '../ops/provider-health';
import { HcpMetrics } from '../observability/hcp-metrics';
import { HcpRuntime } from './hcp-runtime';

const IDEMPOTENCY_PURGE_MS = 10 * 60_000;
const LAG_PROBE_MS = 5000;

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
      const projections = [vmReadModelProjection(), jobReadModelProjection(), new OpsCatalogProjection(), new ClusterUsageProjection(), new JobDispatcherProjection(this.jobs, this.queue), quotaReadModelProjection(), new QuotaReleaseProjection(this.quotas), new AuditProjection(this.logSink('audit')), new MeteringProjection(this.logSink('metering'))];
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
      this.logger.log(`job worker ${worker.id} started`);
    }
  }

  /** Audit and metering records go to the log when no Kafka is configured (they stay queryable by API). */
  private logSink(kind: 'audit' | 'metering'): LogSink {
    const logger = new Logger(kind);
    return new LogSink(kind, (line) => logger.log(line));
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
    if (this.purge) clearInterval(this.purge);
    if (this.healthProbe) clearInterval(this.healthProbe);
    await this.listener?.stop();
    await this.worker?.stop();
    await Promise.all(this.projections.map((p) => p.stop()));
  }
}
