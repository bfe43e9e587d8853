import { logCreator, LogEntry, logLevel as KafkaJsLogLevel } from 'kafkajs';
import { KafkaLogLevel } from './messaging-config';

/**
 * The logger this library writes to: pino's call shape (`logger.warn({ ...fields }, 'message')`), so the
 * application passes its pino (or nestjs-pino PinoLogger) instance as it is.
 */
export interface MessagingLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  /**
   * Whether a line at this level would be written (pino's `isLevelEnabled`). Optional: without it every
   * level counts as enabled. Lets a writer skip building lines nobody will see.
   */
  isLevelEnabled?(level: 'debug' | 'info' | 'warn' | 'error'): boolean;
}

/** A logger that drops everything (tests that do not look at logs). */
export const SILENT_LOGGER: MessagingLogger = Object.freeze({
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
});

export function toKafkaJsLogLevel(level: KafkaLogLevel): KafkaJsLogLevel {
  switch (level) {
    case 'nothing':
      return KafkaJsLogLevel.NOTHING;
    case 'error':
      return KafkaJsLogLevel.ERROR;
    case 'warn':
      return KafkaJsLogLevel.WARN;
    case 'info':
      return KafkaJsLogLevel.INFO;
    case 'debug':
      return KafkaJsLogLevel.DEBUG;
  }
}

// kafkajs warns about this at every producer creation; the publisher limits retries on purpose (a failed
// publish is retried from the projection's checkpoint with a new producer, see KafkaPublisher).
const EXPECTED_WARNINGS = [/^Limiting retries for the idempotent producer/];

/**
 * kafkajs's logCreator over a MessagingLogger: one log line per kafkajs entry, with its namespace and
 * extra fields (broker, retry count, error) as fields and `component: "kafkajs"`.
 */
export function kafkaLogCreator(logger: MessagingLogger): logCreator {
  return () =>
    ({ namespace, level, log }: LogEntry) => {
      const { message, timestamp: _timestamp, ...extra } = log;
      const fields = { component: 'kafkajs', namespace, ...extra };
      const text = `kafkajs: ${message}`;
      if (level === KafkaJsLogLevel.ERROR) logger.error(fields, text);
      else if (level === KafkaJsLogLevel.WARN) {
        if (EXPECTED_WARNINGS.some((re) => re.test(message))) logger.debug(fields, text);
        else logger.warn(fields, text);
      } else if (level === KafkaJsLogLevel.INFO) logger.info(fields, text);
      else logger.debug(fields, text);
    };
}
