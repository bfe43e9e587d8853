import { MessagingError } from './errors';
import { MessageEnvelope } from './message-envelope';
import { MessagingTopic } from './messaging-config';
import { MessagingLogger } from './messaging-logger';

/** What `ensureTopics` found or made for one topic. */
export interface TopicStatus {
  topic: MessagingTopic;
  name: string;
  /** True when this call created the topic. */
  created: boolean;
  /** Partitions the topic has now (may differ from the configuration for a topic that existed). */
  partitions: number;
  /** The topic's retention.ms now, null when it could not be read. */
  retentionMs: number | null;
}

/** One publish call, for metrics (publish failures, latency) without a metrics dependency here. */
export interface PublishObservation {
  topic: MessagingTopic;
  topicName: string;
  messages: number;
  durationMs: number;
  outcome: 'ok' | 'failed';
  error?: MessagingError;
}

export interface PublisherOptions {
  logger?: MessagingLogger;
  /** Called after every publish, acknowledged or failed. Must not throw (errors are logged and dropped). */
  onPublish?: (observation: PublishObservation) => void;
}

/**
 * Where audit and metering projections send their messages. `publish` resolves only once every message
 * is durably accepted (Kafka: acknowledged by all in-sync replicas), so the caller advances its checkpoint
 * after `await publish(...)` and never before. It rejects with a MessagingError; the caller retries the
 * same events from its checkpoint, which makes delivery at least once: consumers de-duplicate by event id.
 */
export interface MessagePublisher {
  readonly kind: 'kafka' | 'log';
  /** The configured Kafka topic name of a topic role. */
  topicName(topic: MessagingTopic): string;
  connect(): Promise<void>;
  /** Creates missing topics with the configured partitions, replication and retention; reports each topic. */
  ensureTopics(): Promise<TopicStatus[]>;
  /** Publishes in order; resolves after the broker acknowledged all of them. */
  publish(topic: MessagingTopic, messages: readonly MessageEnvelope[]): Promise<void>;
  /** Closes connections. The publisher cannot be used after it. */
  disconnect(): Promise<void>;
}
