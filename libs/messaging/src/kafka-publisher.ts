import { Admin, ConfigResourceTypes, Kafka, KafkaConfig, Partitioners, Producer, RetryOptions } from 'kafkajs';
import { MessagingError } from './errors';
import { MessageEnvelope, toRecord } from './message-envelope';
import { assertValidMessagingConfig, MESSAGING_TOPICS, MessagingConfig, MessagingTopic } from './messaging-config';
import { kafkaLogCreator, MessagingLogger, SILENT_LOGGER, toKafkaJsLogLevel } from './messaging-logger';
import { MessagePublisher, PublisherOptions, PublishObservation, TopicStatus } from './publisher';

/**
 * Publishes envelopes to Kafka with kafkajs.
 *
 * - Idempotent producer (`idempotent: true`, acks = all, one request in flight per broker): the retries
 *   kafkajs makes inside one `publish` never duplicate or reorder a message.
 * - `publish` resolves only after the broker acknowledged every message, and rejects (PUBLISH_FAILED,
 *   or PUBLISH_TIMEOUT after `publishTimeoutMs`) otherwise. After a failure the producer is discarded and a
 *   new one (new producer id) is made for the next call, so the caller can retry the same messages from its
 *   checkpoint; a message the broker had written before the failure then appears twice, which consumers
 *   absorb by de-duplicating on the event id (at least once).
 * - Calls are queued: messages of two `publish` calls are never interleaved, so per-key order holds as long
 *   as the caller publishes in event order.
 * - Records: key = project id, JSON envelope value, headers event-id, trace-id, schema-version (see
 *   message-envelope.ts). The default partitioner (murmur2, as the Java client) maps a key to a partition.
 */
export class KafkaPublisher implements MessagePublisher {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly logger: MessagingLogger;
  private readonly onPublish?: (observation: PublishObservation) => void;
  private producer: Producer | null = null;
  private connecting: Promise<Producer> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly config: MessagingConfig,
    options: PublisherOptions = {},
  ) {
    assertValidMessagingConfig(config);
    if (config.brokers.length === 0)
      throw new MessagingError('CONFIG', 'KafkaPublisher needs at least one broker (use LogPublisher without Kafka)');
    this.logger = options.logger ?? SILENT_LOGGER;
    this.onPublish = options.onPublish;
    const kafkaConfig: KafkaConfig = {
      clientId: config.clientId,
      brokers: config.brokers,
      ssl: config.ssl,
      connectionTimeout: config.connectionTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      retry: this.retryOptions(),
      logLevel: toKafkaJsLogLevel(config.logLevel),
      logCreator: kafkaLogCreator(this.logger),
    };
    if (config.sasl)
      kafkaConfig.sasl = {
        mechanism: config.sasl.mechanism,
        username: config.sasl.username,
        password: config.sasl.password,
      } as KafkaConfig['sasl'];
    this.kafka = new Kafka(kafkaConfig);
  }

  topicName(topic: MessagingTopic): string {
    return this.config.topics[topic].name;
  }

  async connect(): Promise<void> {
    await this.getProducer();
  }

  async publish(topic: MessagingTopic, messages: readonly MessageEnvelope[]): Promise<void> {
    if (!MESSAGING_TOPICS.includes(topic))
      throw new MessagingError('CONFIG', `unknown topic role ${JSON.stringify(topic)}`);
    // Validate the whole batch before anything is sent: a malformed message is a bug, not an outage.
    const records = messages.map(toRecord);
    if (records.length === 0) return;
    const run = (): Promise<void> => this.publishNow(topic, records);
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  async ensureTopics(): Promise<TopicStatus[]> {
    this.assertOpen();
    const admin = this.kafka.admin({ retry: this.retryOptions() });
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const missing = MESSAGING_TOPICS.filter((t) => !existing.has(this.topicName(t)));
      if (missing.length > 0) {
        await admin.createTopics({
          waitForLeaders: true,
          timeout: this.config.requestTimeoutMs,
          topics: missing.map((t) => {
            const c = this.config.topics[t];
            return {
              topic: c.name,
              numPartitions: c.partitions,
              replicationFactor: c.replicationFactor,
              configEntries: [
                { name: 'retention.ms', value: String(c.retentionMs) },
                { name: 'cleanup.policy', value: 'delete' },
              ],
            };
          }),
        });
        for (const t of missing)
          this.logger.info(
            {
              component: 'messaging',
              topic: this.topicName(t),
              partitions: this.config.topics[t].partitions,
              retentionMs: this.config.topics[t].retentionMs,
            },
            `created Kafka topic ${this.topicName(t)}`,
          );
      }
      return await this.describeTopics(admin, new Set(missing));
    } catch (error) {
      if (error instanceof MessagingError) throw error;
      throw new MessagingError(
        'TOPIC_SETUP',
        `could not ensure Kafka topics ${MESSAGING_TOPICS.map((t) => this.topicName(t)).join(', ')}: ${describe(error)}`,
        { cause: error },
      );
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async disconnect(): Promise<void> {
    this.closed = true;
    await this.discardProducer();
  }

  // --- internals ---------------------------------------------------------------------------------------

  private retryOptions(): RetryOptions {
    // A bounded number of quick retries; the caller's checkpoint is the long-term retry.
    return { retries: this.config.retries, initialRetryTime: 250, maxRetryTime: 5_000, factor: 0.2, multiplier: 2 };
  }

  private assertOpen(): void {
    if (this.closed) throw new MessagingError('PUBLISH_FAILED', 'the Kafka publisher is closed');
  }

  private async getProducer(): Promise<Producer> {
    this.assertOpen();
    if (this.producer) return this.producer;
    if (!this.connecting) {
      const producer = this.kafka.producer({
        idempotent: true,
        // kafkajs keeps one produce request in flight per broker for an idempotent producer anyway; say so.
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
        retry: this.retryOptions(),
      });
      this.connecting = producer
        .connect()
        .then(() => {
          this.producer = producer;
          return producer;
        })
        .catch(async (error: unknown) => {
          await producer.disconnect().catch(() => undefined);
          throw new MessagingError(
            'PUBLISH_FAILED',
            `could not connect to Kafka (${this.config.brokers.join(',')}): ${describe(error)}`,
            { cause: error },
          );
        })
        .finally(() => {
          this.connecting = null;
        });
    }
    return this.connecting;
  }

  private async discardProducer(): Promise<void> {
    const producer = this.producer;
    this.producer = null;
    const connecting = this.connecting;
    const pending = producer ?? (connecting ? await connecting.catch(() => null) : null);
    if (pending) await pending.disconnect().catch(() => undefined);
  }

  private async publishNow(topic: MessagingTopic, records: ReturnType<typeof toRecord>[]): Promise<void> {
    const topicName = this.topicName(topic);
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new MessagingError(
              'PUBLISH_TIMEOUT',
              `publishing ${records.length} message(s) to ${topicName} was not acknowledged within ${this.config.publishTimeoutMs} ms`,
            ),
          ),
        this.config.publishTimeoutMs,
      );
    });
    try {
      await Promise.race([deadline, this.sendAll(topicName, records)]);
      this.observe({ topic, topicName, messages: records.length, durationMs: Date.now() - started, outcome: 'ok' });
    } catch (error) {
      const failure =
        error instanceof MessagingError
          ? error
          : new MessagingError(
              'PUBLISH_FAILED',
              `publishing ${records.length} message(s) to ${topicName} failed: ${describe(error)}`,
              { cause: error },
            );
      // A producer whose send failed or timed out may hold unacknowledged sequence numbers: start afresh.
      await this.discardProducer();
      this.logger.warn(
        {
          component: 'messaging',
          topic: topicName,
          messages: records.length,
          code: failure.code,
          err: { message: failure.message },
        },
        'Kafka publish failed; the caller retries from its checkpoint',
      );
      this.observe({
        topic,
        topicName,
        messages: records.length,
        durationMs: Date.now() - started,
        outcome: 'failed',
        error: failure,
      });
      throw failure;
    } finally {
      clearTimeout(timer);
    }
  }

  private async sendAll(topicName: string, records: ReturnType<typeof toRecord>[]): Promise<void> {
    const producer = await this.getProducer();
    for (let i = 0; i < records.length; i += this.config.maxBatchMessages) {
      const chunk = records.slice(i, i + this.config.maxBatchMessages);
      await producer.send({
        topic: topicName,
        acks: -1,
        timeout: this.config.requestTimeoutMs,
        messages: chunk.map((r) => ({ key: r.key, value: r.value, headers: r.headers })),
      });
    }
  }

  private async describeTopics(admin: Admin, created: Set<MessagingTopic>): Promise<TopicStatus[]> {
    const names = MESSAGING_TOPICS.map((t) => this.topicName(t));
    const metadata = await admin.fetchTopicMetadata({ topics: names });
    let retention = new Map<string, number>();
    try {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['retention.ms'] })),
      });
      retention = new Map(
        described.resources.flatMap((r) =>
          r.configEntries
            .filter((e) => e.configName === 'retention.ms')
            .map((e) => [r.resourceName, Number(e.configValue)] as [string, number]),
        ),
      );
    } catch (error) {
      this.logger.warn(
        { component: 'messaging', err: { message: describe(error) } },
        'could not read the retention of the Kafka topics',
      );
    }
    return MESSAGING_TOPICS.map((topic) => {
      const config = this.config.topics[topic];
      const partitions = metadata.topics.find((m) => m.name === config.name)?.partitions.length ?? 0;
      const retentionMs = retention.get(config.name) ?? null;
      if (!created.has(topic) && partitions !== config.partitions) {
        // Adding partitions would move keys to other partitions and break per-project order: ops decide.
        this.logger.warn(
          { component: 'messaging', topic: config.name, partitions, configured: config.partitions },
          `Kafka topic ${config.name} has ${partitions} partitions, not the configured ${config.partitions}; left as it is`,
        );
      }
      if (!created.has(topic) && retentionMs !== null && retentionMs !== config.retentionMs) {
        this.logger.warn(
          { component: 'messaging', topic: config.name, retentionMs, configured: config.retentionMs },
          `Kafka topic ${config.name} has retention.ms ${retentionMs}, not the configured ${config.retentionMs}; left as it is`,
        );
      }
      return { topic, name: config.name, created: created.has(topic), partitions, retentionMs };
    });
  }

  private observe(observation: PublishObservation): void {
    if (!this.onPublish) return;
    try {
      this.onPublish(observation);
    } catch (error) {
      this.logger.warn({ component: 'messaging', err: { message: describe(error) } }, 'onPublish observer threw');
    }
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error && cause.message && !error.message.includes(cause.message)
      ? `${error.message} (${cause.message})`
      : error.message;
  }
  return String(error);
}
