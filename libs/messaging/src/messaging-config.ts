import { MessagingError } from './errors';

/** The topics HCP publishes, by role. Their names, partitions and retention are configuration. */
export type MessagingTopic = 'audit' | 'metering';
export const MESSAGING_TOPICS: readonly MessagingTopic[] = ['audit', 'metering'];

export interface TopicConfig {
  /** Kafka topic name, for example `hcp.audit.v1`. */
  name: string;
  /** Partitions created by `ensureTopics`. Messages are keyed by project id, so more partitions keep per-project order. */
  partitions: number;
  /** Replication factor created by `ensureTopics` (1 for a single broker). */
  replicationFactor: number;
  /** `retention.ms` of the topic; -1 keeps messages forever. */
  retentionMs: number;
}

export type KafkaLogLevel = 'nothing' | 'error' | 'warn' | 'info' | 'debug';
export type KafkaSaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface MessagingConfig {
  /** `host:port` of the bootstrap brokers. Empty: no Kafka, messages are written to the log (`LogPublisher`). */
  brokers: string[];
  clientId: string;
  topics: Record<MessagingTopic, TopicConfig>;
  ssl: boolean;
  sasl: { mechanism: KafkaSaslMechanism; username: string; password: string } | null;
  /** TCP connect timeout to one broker. */
  connectionTimeoutMs: number;
  /** Time to wait for one broker response (and the produce timeout sent with acks=all). */
  requestTimeoutMs: number;
  /**
   * Upper bound of one `publish` call, retries included. After it the call rejects with PUBLISH_TIMEOUT
   * and the producer is recreated, so a broker outage blocks the caller's checkpoint instead of hanging it.
   */
  publishTimeoutMs: number;
  /** Retries of one produce request before `publish` rejects with PUBLISH_FAILED. */
  retries: number;
  /** Messages per produce request; a larger `publish` is sent in chunks of this size, in order. */
  maxBatchMessages: number;
  /** Level of kafkajs's own log lines forwarded to the application logger. */
  logLevel: KafkaLogLevel;
}

export const DEFAULT_AUDIT_TOPIC = 'hcp.audit.v1';
export const DEFAULT_METERING_TOPIC = 'hcp.metering.v1';
const DAY_MS = 24 * 60 * 60 * 1000;

export const DEFAULT_MESSAGING_CONFIG: Readonly<MessagingConfig> = Object.freeze({
  brokers: [],
  clientId: 'hcp',
  topics: {
    audit: { name: DEFAULT_AUDIT_TOPIC, partitions: 6, replicationFactor: 1, retentionMs: 400 * DAY_MS },
    metering: { name: DEFAULT_METERING_TOPIC, partitions: 6, replicationFactor: 1, retentionMs: 35 * DAY_MS },
  },
  ssl: false,
  sasl: null,
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 30_000,
  publishTimeoutMs: 60_000,
  retries: 8,
  maxBatchMessages: 500,
  logLevel: 'warn',
});

/** A config with defaults for everything not given (topics merged field by field). */
export function messagingConfig(
  overrides: Partial<Omit<MessagingConfig, 'topics'>> & {
    topics?: Partial<Record<MessagingTopic, Partial<TopicConfig>>>;
  } = {},
): MessagingConfig {
  const { topics, ...rest } = overrides;
  return {
    ...DEFAULT_MESSAGING_CONFIG,
    ...rest,
    brokers: [...(rest.brokers ?? DEFAULT_MESSAGING_CONFIG.brokers)],
    topics: {
      audit: { ...DEFAULT_MESSAGING_CONFIG.topics.audit, ...topics?.audit },
      metering: { ...DEFAULT_MESSAGING_CONFIG.topics.metering, ...topics?.metering },
    },
  };
}

/** The messaging variables, in the shape of the central CONFIG_VARIABLES table. */
export const MESSAGING_CONFIG_VARIABLES: ReadonlyArray<{ name: string; default: string; description: string }> = [
  {
    name: 'KAFKA_BROKERS',
    default: '',
    description:
      'Kafka bootstrap brokers host:port[,host:port...]; empty writes audit and metering messages to the log instead',
  },
  { name: 'HCP_KAFKA_CLIENT_ID', default: 'hcp', description: 'Kafka client id' },
  { name: 'HCP_KAFKA_AUDIT_TOPIC', default: DEFAULT_AUDIT_TOPIC, description: 'topic of audit messages' },
  {
    name: 'HCP_KAFKA_AUDIT_PARTITIONS',
    default: '6',
    description: 'partitions of the audit topic when HCP creates it',
  },
  {
    name: 'HCP_KAFKA_AUDIT_RETENTION_MS',
    default: String(400 * DAY_MS),
    description: 'retention.ms of the audit topic when HCP creates it (-1: forever)',
  },
  { name: 'HCP_KAFKA_METERING_TOPIC', default: DEFAULT_METERING_TOPIC, description: 'topic of metering messages' },
  {
    name: 'HCP_KAFKA_METERING_PARTITIONS',
    default: '6',
    description: 'partitions of the metering topic when HCP creates it',
  },
  {
    name: 'HCP_KAFKA_METERING_RETENTION_MS',
    default: String(35 * DAY_MS),
    description: 'retention.ms of the metering topic when HCP creates it (-1: forever)',
  },
  { name: 'HCP_KAFKA_REPLICATION_FACTOR', default: '1', description: 'replication factor of topics HCP creates' },
  { name: 'HCP_KAFKA_SSL', default: 'false', description: 'connect to the brokers over TLS' },
  {
    name: 'HCP_KAFKA_SASL_MECHANISM',
    default: '',
    description: 'plain, scram-sha-256 or scram-sha-512; empty: no SASL',
  },
  { name: 'HCP_KAFKA_SASL_USERNAME', default: '', description: 'SASL user name' },
  { name: 'HCP_KAFKA_SASL_PASSWORD', default: '', description: 'SASL password' },
  {
    name: 'HCP_KAFKA_PUBLISH_TIMEOUT_MS',
    default: '60000',
    description: 'longest one publish may take before it fails and the projection retries from its checkpoint',
  },
  {
    name: 'HCP_KAFKA_LOG_LEVEL',
    default: 'warn',
    description: 'kafkajs log level forwarded to the HCP log: nothing, error, warn, info or debug',
  },
];

const LOG_LEVELS: readonly KafkaLogLevel[] = ['nothing', 'error', 'warn', 'info', 'debug'];
const SASL_MECHANISMS: readonly KafkaSaslMechanism[] = ['plain', 'scram-sha-256', 'scram-sha-512'];
// Kafka's legal topic names: up to 249 of [a-zA-Z0-9._-], not "." or "..".
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
const BROKER = /^(\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9._-]+):\d{1,5}$/;

/**
 * Reads the MESSAGING_CONFIG_VARIABLES from the environment. Problems are collected and thrown together
 * as one MessagingError with code CONFIG (values of SASL variables are never echoed).
 */
export function loadMessagingConfig(env: NodeJS.ProcessEnv = process.env): MessagingConfig {
  const problems: string[] = [];
  const raw = (name: string): string => {
    const spec = MESSAGING_CONFIG_VARIABLES.find((v) => v.name === name);
    if (!spec) throw new Error(`unknown messaging variable ${name}`);
    const value = env[name]?.trim();
    return value === undefined || value === '' ? spec.default : value;
  };
  const int = (name: string, min: number, max: number): number => {
    const text = raw(name);
    const value = Number(text);
    if (!/^-?\d+$/.test(text) || value < min || value > max) {
      problems.push(`${name}=${JSON.stringify(text.slice(0, 40))}: expected an integer from ${min} to ${max}`);
      return min;
    }
    return value;
  };
  const retention = (name: string): number => {
    const value = int(name, -1, Number.MAX_SAFE_INTEGER);
    if (value === 0) problems.push(`${name}=0: expected a positive number of milliseconds or -1`);
    return value;
  };
  const topicName = (name: string): string => {
    const value = raw(name);
    if (!TOPIC_NAME.test(value) || value === '.' || value === '..') {
      problems.push(
        `${name}=${JSON.stringify(value.slice(0, 60))}: expected a Kafka topic name (letters, digits, ".", "_", "-")`,
      );
    }
    return value;
  };

  const brokers = raw('KAFKA_BROKERS')
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '');
  for (const broker of brokers) {
    if (!BROKER.test(broker)) problems.push(`KAFKA_BROKERS: ${JSON.stringify(broker.slice(0, 80))} is not host:port`);
  }

  const sslText = raw('HCP_KAFKA_SSL').toLowerCase();
  if (!['true', 'false', '1', '0'].includes(sslText))
    problems.push(`HCP_KAFKA_SSL=${JSON.stringify(sslText.slice(0, 20))}: expected true or false`);

  const mechanism = raw('HCP_KAFKA_SASL_MECHANISM').toLowerCase();
  let sasl: MessagingConfig['sasl'] = null;
  if (mechanism !== '') {
    if (!SASL_MECHANISMS.includes(mechanism as KafkaSaslMechanism)) {
      problems.push(
        `HCP_KAFKA_SASL_MECHANISM=${JSON.stringify(mechanism.slice(0, 30))}: expected one of ${SASL_MECHANISMS.join(', ')}`,
      );
    }
    const username = env.HCP_KAFKA_SASL_USERNAME ?? '';
    const password = env.HCP_KAFKA_SASL_PASSWORD ?? '';
    if (!username) problems.push('HCP_KAFKA_SASL_MECHANISM is set but HCP_KAFKA_SASL_USERNAME is not');
    if (!password) problems.push('HCP_KAFKA_SASL_MECHANISM is set but HCP_KAFKA_SASL_PASSWORD is not');
    sasl = { mechanism: mechanism as KafkaSaslMechanism, username, password };
  }

  const logLevel = raw('HCP_KAFKA_LOG_LEVEL').toLowerCase() as KafkaLogLevel;
  if (!LOG_LEVELS.includes(logLevel))
    problems.push(
      `HCP_KAFKA_LOG_LEVEL=${JSON.stringify(logLevel.slice(0, 20))}: expected one of ${LOG_LEVELS.join(', ')}`,
    );

  const replicationFactor = int('HCP_KAFKA_REPLICATION_FACTOR', 1, 32);
  const config = messagingConfig({
    brokers,
    clientId: raw('HCP_KAFKA_CLIENT_ID'),
    topics: {
      audit: {
        name: topicName('HCP_KAFKA_AUDIT_TOPIC'),
        partitions: int('HCP_KAFKA_AUDIT_PARTITIONS', 1, 10_000),
        replicationFactor,
        retentionMs: retention('HCP_KAFKA_AUDIT_RETENTION_MS'),
      },
      metering: {
        name: topicName('HCP_KAFKA_METERING_TOPIC'),
        partitions: int('HCP_KAFKA_METERING_PARTITIONS', 1, 10_000),
        replicationFactor,
        retentionMs: retention('HCP_KAFKA_METERING_RETENTION_MS'),
      },
    },
    ssl: sslText === 'true' || sslText === '1',
    sasl,
    publishTimeoutMs: int('HCP_KAFKA_PUBLISH_TIMEOUT_MS', 1_000, 3_600_000),
    logLevel,
  });
  if (config.topics.audit.name === config.topics.metering.name) {
    problems.push(
      `HCP_KAFKA_AUDIT_TOPIC and HCP_KAFKA_METERING_TOPIC are both ${JSON.stringify(config.topics.audit.name)}: use two topics`,
    );
  }
  if (problems.length > 0)
    throw new MessagingError('CONFIG', `invalid messaging configuration:\n  - ${problems.join('\n  - ')}`);
  return config;
}

/** One line for the start-up log; never the SASL password. */
export function describeMessagingConfig(config: MessagingConfig): string {
  if (config.brokers.length === 0) return 'messaging: no Kafka configured, audit and metering messages go to the log';
  const topics = MESSAGING_TOPICS.map(
    (t) => `${config.topics[t].name} (${config.topics[t].partitions} partitions)`,
  ).join(', ');
  return `messaging: Kafka ${config.brokers.join(',')}${config.ssl ? ' over TLS' : ''}${config.sasl ? ` with SASL ${config.sasl.mechanism} as ${config.sasl.username}` : ''}; topics ${topics}`;
}

/** Validates a config built in code (tests, the lead's loader); throws MessagingError CONFIG. */
export function assertValidMessagingConfig(config: MessagingConfig): void {
  const problems: string[] = [];
  for (const topic of MESSAGING_TOPICS) {
    const t = config.topics[topic];
    if (!TOPIC_NAME.test(t.name) || t.name === '.' || t.name === '..')
      problems.push(`topics.${topic}.name ${JSON.stringify(t.name)} is not a Kafka topic name`);
    if (!Number.isInteger(t.partitions) || t.partitions < 1)
      problems.push(`topics.${topic}.partitions must be a positive integer`);
    if (!Number.isInteger(t.replicationFactor) || t.replicationFactor < 1)
      problems.push(`topics.${topic}.replicationFactor must be a positive integer`);
    if (!Number.isInteger(t.retentionMs) || (t.retentionMs < 1 && t.retentionMs !== -1))
      problems.push(`topics.${topic}.retentionMs must be positive or -1`);
  }
  if (config.topics.audit.name === config.topics.metering.name)
    problems.push('the audit and metering topics must differ');
  if (!Number.isInteger(config.retries) || config.retries < 1)
    problems.push('retries must be at least 1 (the idempotent producer needs retries)');
  if (!Number.isInteger(config.maxBatchMessages) || config.maxBatchMessages < 1)
    problems.push('maxBatchMessages must be a positive integer');
  for (const broker of config.brokers)
    if (!BROKER.test(broker)) problems.push(`broker ${JSON.stringify(broker)} is not host:port`);
  if (problems.length > 0)
    throw new MessagingError('CONFIG', `invalid messaging configuration:\n  - ${problems.join('\n  - ')}`);
}
