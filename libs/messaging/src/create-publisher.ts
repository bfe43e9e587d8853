import { KafkaPublisher } from './kafka-publisher';
import { LogPublisher } from './log-publisher';
import { MessagingConfig } from './messaging-config';
import { MessagingLogger } from './messaging-logger';
import { MessagePublisher, PublisherOptions } from './publisher';

/** Kafka when brokers are configured, otherwise the log (the embedded default). */
export function createPublisher(
  config: MessagingConfig,
  options: PublisherOptions & { logger: MessagingLogger },
): MessagePublisher {
  return config.brokers.length > 0 ? new KafkaPublisher(config, options) : new LogPublisher(config, options);
}
