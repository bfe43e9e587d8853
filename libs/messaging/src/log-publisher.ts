import { MessagingError } from './errors';
import { MessageEnvelope, toRecord } from './message-envelope';
import { assertValidMessagingConfig, MESSAGING_TOPICS, MessagingConfig, MessagingTopic } from './messaging-config';
import { MessagingLogger } from './messaging-logger';
import { MessagePublisher, PublisherOptions, PublishObservation, TopicStatus } from './publisher';

/**
 * The publisher of the embedded default (no Kafka configured): every message becomes one log line with the
 * same key, headers and JSON value a Kafka record would have. With a pino logger that is one JSON line:
 *
 *   {"level":30,...,"component":"messaging","topic":"hcp.audit.v1","key":"p-1","headers":{...},"message":{...},"msg":"hcp.audit.v1 message"}
 *
 * `publish` resolves once the lines are handed to the logger, so the caller's checkpoint logic is the same
 * as with Kafka.
 */
export class LogPublisher implements MessagePublisher {
  readonly kind = 'log' as const;
  private readonly logger: MessagingLogger;
  private readonly onPublish?: (observation: PublishObservation) => void;
  private closed = false;

  constructor(
    private readonly config: MessagingConfig,
    options: PublisherOptions & { logger: MessagingLogger },
  ) {
    assertValidMessagingConfig(config);
    this.logger = options.logger;
    this.onPublish = options.onPublish;
  }

  topicName(topic: MessagingTopic): string {
    return this.config.topics[topic].name;
  }

  async connect(): Promise<void> {
    this.assertOpen();
  }

  async ensureTopics(): Promise<TopicStatus[]> {
    this.assertOpen();
    return MESSAGING_TOPICS.map((topic) => ({
      topic,
      name: this.topicName(topic),
      created: false,
      partitions: this.config.topics[topic].partitions,
      retentionMs: null,
    }));
  }

  async publish(topic: MessagingTopic, messages: readonly MessageEnvelope[]): Promise<void> {
    this.assertOpen();
    if (!MESSAGING_TOPICS.includes(topic))
      throw new MessagingError('CONFIG', `unknown topic role ${JSON.stringify(topic)}`);
    // Checked and serialised whatever the log level: an envelope Kafka would refuse fails here too.
    const records = messages.map(toRecord);
    const topicName = this.topicName(topic);
    const started = Date.now();
    // A line below the log level is dropped by the logger: not parsing its value back for it saves the
    // background process a JSON.parse per audit and metering record (LOG_LEVEL=warn and above).
    const writing = this.logger.isLevelEnabled?.('info') ?? true;
    for (const record of writing ? records : []) {
      this.logger.info(
        {
          component: 'messaging',
          topic: topicName,
          key: record.key,
          headers: record.headers,
          message: JSON.parse(record.value) as unknown,
        },
        `${topicName} message`,
      );
    }
    if (records.length > 0 && this.onPublish) {
      try {
        this.onPublish({ topic, topicName, messages: records.length, durationMs: Date.now() - started, outcome: 'ok' });
      } catch {
        // an observer's failure is not the publisher's
      }
    }
  }

  async disconnect(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new MessagingError('PUBLISH_FAILED', 'the log publisher is closed');
  }
}

/**
 * A MessagingLogger that writes each entry as one JSON line to a stream (standard output by default), for
 * CLIs and processes without pino: {"time":"...","level":"info","msg":"...",...fields}.
 */
export function jsonLinesLogger(write: (line: string) => void = (line) => process.stdout.write(line)): MessagingLogger {
  const entry = (level: string) => (fields: object, message: string) => {
    write(`${JSON.stringify({ time: new Date().toISOString(), level, ...fields, msg: message })}\n`);
  };
  return { debug: entry('debug'), info: entry('info'), warn: entry('warn'), error: entry('error') };
}
