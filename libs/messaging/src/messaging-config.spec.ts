import { MessagingError } from './errors';
import {
  assertValidMessagingConfig,
  DEFAULT_MESSAGING_CONFIG,
  describeMessagingConfig,
  loadMessagingConfig,
  MESSAGING_CONFIG_VARIABLES,
  messagingConfig,
} from './messaging-config';

function configError(fn: () => unknown): MessagingError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(MessagingError);
    expect((error as MessagingError).code).toBe('CONFIG');
    return error as MessagingError;
  }
  throw new Error('expected a configuration error');
}

describe('loadMessagingConfig', () => {
  it('defaults to no Kafka and the v1 topic names', () => {
    const config = loadMessagingConfig({});
    expect(config.brokers).toEqual([]);
    expect(config.topics.audit).toMatchObject({ name: 'hcp.audit.v1', partitions: 6, replicationFactor: 1 });
    expect(config.topics.metering).toMatchObject({ name: 'hcp.metering.v1', partitions: 6, replicationFactor: 1 });
    expect(config).toEqual(messagingConfig());
    expect(describeMessagingConfig(config)).toMatch(/no Kafka configured/);
  });

  it('reads brokers, topic names, partitions, retention and replication from the environment', () => {
    const config = loadMessagingConfig({
      KAFKA_BROKERS: ' 127.0.0.1:29092, kafka-2.internal:9092 ,[::1]:9093',
      HCP_KAFKA_AUDIT_TOPIC: 'acme.audit.v1',
      HCP_KAFKA_AUDIT_PARTITIONS: '12',
      HCP_KAFKA_AUDIT_RETENTION_MS: '-1',
      HCP_KAFKA_METERING_TOPIC: 'acme.metering.v1',
      HCP_KAFKA_METERING_PARTITIONS: '3',
      HCP_KAFKA_METERING_RETENTION_MS: '86400000',
      HCP_KAFKA_REPLICATION_FACTOR: '3',
      HCP_KAFKA_SSL: 'true',
      HCP_KAFKA_PUBLISH_TIMEOUT_MS: '15000',
      HCP_KAFKA_LOG_LEVEL: 'info',
    });
    expect(config.brokers).toEqual(['127.0.0.1:29092', 'kafka-2.internal:9092', '[::1]:9093']);
    expect(config.topics.audit).toEqual({
      name: 'acme.audit.v1',
      partitions: 12,
      replicationFactor: 3,
      retentionMs: -1,
    });
    expect(config.topics.metering).toEqual({
      name: 'acme.metering.v1',
      partitions: 3,
      replicationFactor: 3,
      retentionMs: 86_400_000,
    });
    expect(config).toMatchObject({ ssl: true, publishTimeoutMs: 15_000, logLevel: 'info', sasl: null });
  });

  it('collects every problem in one error and never echoes the SASL password', () => {
    const error = configError(() =>
      loadMessagingConfig({
        KAFKA_BROKERS: 'no-port',
        HCP_KAFKA_AUDIT_TOPIC: 'bad topic!',
        HCP_KAFKA_METERING_PARTITIONS: '0',
        HCP_KAFKA_AUDIT_RETENTION_MS: '0',
        HCP_KAFKA_SSL: 'maybe',
        HCP_KAFKA_SASL_MECHANISM: 'scram-sha-256',
        HCP_KAFKA_SASL_PASSWORD: 'hunter2-secret',
        HCP_KAFKA_LOG_LEVEL: 'loud',
      }),
    );
    for (const name of [
      'KAFKA_BROKERS',
      'HCP_KAFKA_AUDIT_TOPIC',
      'HCP_KAFKA_METERING_PARTITIONS',
      'HCP_KAFKA_AUDIT_RETENTION_MS',
      'HCP_KAFKA_SSL',
      'HCP_KAFKA_SASL_USERNAME',
      'HCP_KAFKA_LOG_LEVEL',
    ]) {
      expect(error.message).toContain(name);
    }
    expect(error.message).not.toContain('hunter2-secret');
  });

  it('refuses one topic for both audit and metering', () => {
    expect(
      configError(() => loadMessagingConfig({ HCP_KAFKA_AUDIT_TOPIC: 'x.v1', HCP_KAFKA_METERING_TOPIC: 'x.v1' }))
        .message,
    ).toMatch(/both "x.v1"/);
  });

  it('describes SASL by mechanism and user only', () => {
    const config = loadMessagingConfig({
      KAFKA_BROKERS: 'k:9092',
      HCP_KAFKA_SASL_MECHANISM: 'plain',
      HCP_KAFKA_SASL_USERNAME: 'hcp',
      HCP_KAFKA_SASL_PASSWORD: 'pw-value',
    });
    expect(config.sasl).toEqual({ mechanism: 'plain', username: 'hcp', password: 'pw-value' });
    const line = describeMessagingConfig(config);
    expect(line).toContain('SASL plain as hcp');
    expect(line).not.toContain('pw-value');
  });

  it('lists every variable it reads, each with a description', () => {
    expect(new Set(MESSAGING_CONFIG_VARIABLES.map((v) => v.name)).size).toBe(MESSAGING_CONFIG_VARIABLES.length);
    for (const v of MESSAGING_CONFIG_VARIABLES) expect(v.description.length).toBeGreaterThan(10);
  });
});

describe('messagingConfig / assertValidMessagingConfig', () => {
  it('merges topic overrides field by field and never shares the defaults', () => {
    const config = messagingConfig({ brokers: ['a:1'], topics: { audit: { partitions: 2 } } });
    expect(config.topics.audit).toEqual({ ...DEFAULT_MESSAGING_CONFIG.topics.audit, partitions: 2 });
    config.topics.metering.partitions = 99;
    config.brokers.push('b:2');
    expect(DEFAULT_MESSAGING_CONFIG.topics.metering.partitions).toBe(6);
    expect(DEFAULT_MESSAGING_CONFIG.brokers).toEqual([]);
  });

  it('refuses a config the producer cannot honour', () => {
    expect(() => assertValidMessagingConfig(messagingConfig({ retries: 0 }))).toThrow(/retries/);
    expect(() => assertValidMessagingConfig(messagingConfig({ topics: { audit: { partitions: 0 } } }))).toThrow(
      /partitions/,
    );
    expect(() => assertValidMessagingConfig(messagingConfig({ topics: { metering: { retentionMs: 0 } } }))).toThrow(
      /retentionMs/,
    );
    expect(() => assertValidMessagingConfig(messagingConfig({ brokers: ['nope'] }))).toThrow(/host:port/);
    expect(() => assertValidMessagingConfig(messagingConfig())).not.toThrow();
  });
});
