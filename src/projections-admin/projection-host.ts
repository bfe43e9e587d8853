import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { createPublisher, MESSAGING_TOPICS, MessagePublisher } from '@hcp/messaging';
import { Projection, ProjectionLocks, ProjectionRunner, publisherSinks, readModelProjections } from '@hcp/projections';
import { HcpConfig, logLevelEnabled } from '../config/hcp-config';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { HcpRuntime } from '../platform/runtime/hcp-runtime';
import { HCP_CONFIG, HCP_RUNTIME } from '../platform/tokens';

const LAG_PROBE_MS = 5000;

/**
 * Runs the projections in a process whose HCP_ROLES include `projections`: every read model, and the
 * process managers the contexts register (one active instance of each across all processes). Started
 * after Nest is up, stopped before it closes its connections.
 */
@Injectable()
export class ProjectionHost implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly processManagers: Projection[] = [];
  readonly runners: ProjectionRunner[] = [];
  private lagProbe: NodeJS.Timeout | null = null;
  /** The advisory locks of every runner here, on one session: a lock costs the read-model pool no connection. */
  private locks: ProjectionLocks | null = null;
  private publisher: MessagePublisher | null = null;
  /** The projections with their live sinks: those this process runs, or built on demand for a retry. */
  private live: Promise<Projection[]> | null = null;

  constructor(
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
    @Inject(HCP_RUNTIME) private readonly runtime: HcpRuntime,
    private readonly metrics: HcpMetrics,
  ) {}

  /**
   * A projection that acts on the world (queues jobs, releases quota): run like a read model, shown to
   * ops with its position, never rebuilt. Contexts register theirs in `onModuleInit`.
   */
  registerProcessManager(projection: Projection): void {
    this.processManagers.push(projection);
  }

  processManagerNames(): string[] {
    return this.processManagers.map((p) => p.name);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.roles.includes('projections')) return;
    const { dataSource, eventStore, codec } = this.runtime;
    const projections = await this.liveProjections();
    const locks = new ProjectionLocks(dataSource);
    this.locks = locks;
    for (const projection of projections) {
      const name = projection.name;
      // At 0 from the start, so alerts on their increase see the first failure or dead letter.
      this.metrics.projectionDeadLetters.inc({ projection: name }, 0);
      this.metrics.projectionFailures.inc({ projection: name }, 0);
      const runner = new ProjectionRunner(dataSource, eventStore, codec, projection, {
        batchSize: 500,
        retryMs: 1000,
        maxRetryMs: 30_000,
        locks,
        onDeadLetter: () => this.metrics.projectionDeadLetters.inc({ projection: name }),
        onFailure: () => this.metrics.projectionFailures.inc({ projection: name }),
        onUnknownEvent: (type) => this.metrics.unknownEvents.inc({ projection: name, type: type.slice(0, 100) }),
      });
      runner.start();
      this.runners.push(runner);
    }
    this.lagProbe = setInterval(() => void this.recordLag(), LAG_PROBE_MS);
    this.lagProbe.unref();
  }

  /**
   * Every projection with the sinks it publishes to. A dead letter's retry goes through these (never the
   * silent sinks of a rebuild), so an audit or metering record is published when its event finally applies,
   * also in a process that does not run the projections itself.
   */
  liveProjections(): Promise<Projection[]> {
    this.live ??= this.openPublisher().then((publisher) => [
      ...readModelProjections(publisherSinks(publisher)),
      ...this.processManagers,
    ]);
    return this.live;
  }

  /**
   * Kafka when brokers are configured (topics created if missing), else the log; either way audit and
   * metering stay queryable through the API.
   */
  private async openPublisher(): Promise<MessagePublisher> {
    const logger = new Logger('messaging');
    // Every sink's failure counter exists from the start, so an alert on its increase sees the first one.
    for (const sink of MESSAGING_TOPICS) this.metrics.publishFailures.inc({ sink }, 0);
    const publisher = createPublisher(this.config.messaging, {
      logger: {
        debug: (fields, msg) => logger.debug({ ...fields, msg }),
        info: (fields, msg) => logger.log({ ...fields, msg }),
        warn: (fields, msg) => logger.warn({ ...fields, msg }),
        error: (fields, msg) => logger.error({ ...fields, msg }),
        isLevelEnabled: (level) => logLevelEnabled(this.config.logLevel, level),
      },
      onPublish: (o) => {
        this.metrics.publishDuration.observe({ sink: o.topic, outcome: o.outcome }, o.durationMs / 1000);
        if (o.outcome === 'failed') this.metrics.publishFailures.inc({ sink: o.topic });
        else this.metrics.publishedMessages.inc({ sink: o.topic }, o.messages);
      },
    });
    await publisher.connect();
    if (publisher.kind === 'kafka') await publisher.ensureTopics();
    this.publisher = publisher;
    return publisher;
  }

  /**
   * Position and lag of every projection, on this timer rather than after a batch: from the store's head
   * and the stored checkpoints, so the lag keeps growing while a runner fails and restarts (whichever
   * instance is active). While the database cannot answer, the last values stay.
   */
  private async recordLag(): Promise<void> {
    const [head, checkpoints] = await Promise.all([
      this.runtime.eventStore.headPosition(),
      this.runtime.dataSource.query(`SELECT name, position::text AS position FROM projection_checkpoints`) as Promise<
        Array<{ name: string; position: string }>
      >,
    ]).catch(() => [null, null] as const);
    if (head !== null && checkpoints !== null) {
      for (const runner of this.runners) {
        const { name } = runner.status();
        const stored = checkpoints.find((c) => c.name === name);
        const position = stored ? BigInt(stored.position) : -1n;
        this.metrics.projectionPosition.set({ projection: name }, Number(position));
        this.metrics.projectionLag.set({ projection: name }, Number(head > position ? head - position : 0n));
      }
    }
    await this.recordOpenDeadLetters().catch(() => undefined);
  }

  /** Open dead letters per projection this process runs (0 when none: a gauge must come down). */
  private async recordOpenDeadLetters(): Promise<void> {
    const rows: Array<{ projection: string; open: number }> = await this.runtime.dataSource.query(
      `SELECT projection, count(*)::int AS open FROM projection_dead_letters WHERE status = 'open' GROUP BY projection`,
    );
    for (const runner of this.runners) {
      const { name } = runner.status();
      const open = rows.find((r) => r.projection === name)?.open ?? 0;
      this.metrics.projectionDeadLettersOpen.set({ projection: name }, open);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.lagProbe) clearInterval(this.lagProbe);
    await Promise.all(this.runners.map((p) => p.stop()));
    await this.locks?.close();
    await this.publisher?.disconnect();
  }
}
