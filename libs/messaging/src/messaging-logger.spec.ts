import { logLevel } from 'kafkajs';
import { kafkaLogCreator, MessagingLogger, toKafkaJsLogLevel } from './messaging-logger';

describe('kafkaLogCreator', () => {
  const recorder = () => {
    const lines: Array<[string, Record<string, unknown>, string]> = [];
    const at = (level: string) => (fields: object, message: string) =>
      void lines.push([level, fields as Record<string, unknown>, message]);
    const logger: MessagingLogger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
    return { lines, log: kafkaLogCreator(logger)(logLevel.DEBUG) };
  };

  it('forwards kafkajs entries at their level with namespace and extra fields', () => {
    const { lines, log } = recorder();
    log({
      namespace: 'Connection',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: { timestamp: 't', message: 'Connection error', broker: '127.0.0.1:1', retryCount: 2 },
    });
    log({ namespace: 'Producer', level: logLevel.INFO, label: 'INFO', log: { timestamp: 't', message: 'hello' } });
    log({ namespace: 'Producer', level: logLevel.DEBUG, label: 'DEBUG', log: { timestamp: 't', message: 'detail' } });
    expect(lines).toEqual([
      [
        'error',
        { component: 'kafkajs', namespace: 'Connection', broker: '127.0.0.1:1', retryCount: 2 },
        'kafkajs: Connection error',
      ],
      ['info', { component: 'kafkajs', namespace: 'Producer' }, 'kafkajs: hello'],
      ['debug', { component: 'kafkajs', namespace: 'Producer' }, 'kafkajs: detail'],
    ]);
  });

  it('lowers the expected bounded-retries warning to debug and keeps other warnings', () => {
    const { lines, log } = recorder();
    log({
      namespace: 'Producer',
      level: logLevel.WARN,
      label: 'WARN',
      log: { timestamp: 't', message: 'Limiting retries for the idempotent producer may invalidate EoS guarantees' },
    });
    log({
      namespace: 'Producer',
      level: logLevel.WARN,
      label: 'WARN',
      log: { timestamp: 't', message: 'something else' },
    });
    expect(lines.map(([level]) => level)).toEqual(['debug', 'warn']);
  });

  it('maps configured levels to kafkajs levels', () => {
    expect(toKafkaJsLogLevel('nothing')).toBe(logLevel.NOTHING);
    expect(toKafkaJsLogLevel('warn')).toBe(logLevel.WARN);
    expect(toKafkaJsLogLevel('debug')).toBe(logLevel.DEBUG);
  });
});
