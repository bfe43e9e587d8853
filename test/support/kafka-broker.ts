import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';

/**
 * The real Kafka broker of the tests: `.ci/kafka.sh` starts it (KRaft, jars from Maven Central) and
 * `.ci/run` exports KAFKA_BROKERS. Suites that need it skip, with a name that says so, when it is unset.
 * The helpers' kafkajs clients log nothing: their transient errors (the group coordinator still loading
 * right after a start) are retried by kafkajs, and real failures reach the test as rejections or timeouts.
 */

const ROOT = path.join(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, '.ci', 'kafka.sh');

/** `host:port[,host:port]` of the test broker, or null when none is configured. */
export function kafkaBrokers(): string | null {
  const value = process.env.KAFKA_BROKERS?.trim();
  return value ? value : null;
}

export function brokerList(brokers: string): string[] {
  return brokers
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '');
}

/** A name no earlier run used: the broker keeps its topics and groups between runs. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

export interface ConsumedMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
  timestamp: string;
}

export interface ConsumeOptions {
  /** A real consumer group: offsets are committed under it. */
  groupId: string;
  /** Stop once this returns true for everything received so far. */
  until: (messages: ConsumedMessage[]) => boolean;
  /** Reject after this long (default 30 s), naming how many messages had arrived. */
  timeoutMs?: number;
  /** Default: KAFKA_BROKERS. */
  brokers?: string;
  /** Default true: start at the earliest offset when the group has none committed. */
  fromBeginning?: boolean;
}

/**
 * Consumes `topic` with a kafkajs consumer in consumer group `groupId` until `until(messages)` holds, then
 * disconnects (committing its offsets) and returns the messages in the order they arrived.
 */
export async function consumeAll(topic: string, options: ConsumeOptions): Promise<ConsumedMessage[]> {
  const brokers = options.brokers ?? kafkaBrokers();
  if (!brokers) throw new Error('consumeAll: KAFKA_BROKERS is not set');
  const kafka = new Kafka({
    clientId: `hcp-test-${options.groupId}`,
    brokers: brokerList(brokers),
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
    rebalanceTimeout: 10_000,
  });
  const messages: ConsumedMessage[] = [];
  const timeoutMs = options.timeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: options.fromBeginning ?? true });
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `consumeAll(${topic}): condition not met after ${timeoutMs} ms with ${messages.length} message(s)`,
            ),
          ),
        timeoutMs,
      );
      let done = false;
      consumer.on(consumer.events.CRASH, (event) => {
        if (!event.payload.restart) reject(event.payload.error);
      });
      consumer
        .run({
          eachMessage: async ({ topic: t, partition, message }) => {
            if (done) return;
            const headers: Record<string, string> = {};
            for (const [name, value] of Object.entries(message.headers ?? {})) {
              if (value === undefined) continue;
              headers[name] = Array.isArray(value) ? value.map((v) => v.toString()).join(',') : value.toString();
            }
            messages.push({
              topic: t,
              partition,
              offset: message.offset,
              key: message.key ? message.key.toString() : null,
              value: message.value ? message.value.toString() : null,
              headers,
              timestamp: message.timestamp,
            });
            try {
              if (options.until(messages)) {
                done = true;
                resolve();
              }
            } catch (error) {
              reject(error as Error);
            }
          },
        })
        .catch(reject);
    });
    return messages;
  } finally {
    clearTimeout(timer);
    await consumer.disconnect().catch(() => undefined);
  }
}

/** Committed offsets of a consumer group on a topic, by partition. */
export async function committedOffsets(
  topic: string,
  groupId: string,
  brokers = kafkaBrokers(),
): Promise<Map<number, string>> {
  if (!brokers) throw new Error('committedOffsets: KAFKA_BROKERS is not set');
  const admin = new Kafka({
    clientId: 'hcp-test-admin',
    brokers: brokerList(brokers),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const [result] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map((result?.partitions ?? []).map((p) => [p.partition, p.offset]));
  } finally {
    await admin.disconnect();
  }
}

/** The end offset (high watermark) of each partition: where the next acknowledged message will go. */
export async function endOffsets(topic: string, brokers = kafkaBrokers()): Promise<Map<number, string>> {
  if (!brokers) throw new Error('endOffsets: KAFKA_BROKERS is not set');
  const admin = new Kafka({
    clientId: 'hcp-test-admin',
    brokers: brokerList(brokers),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, o.high]));
  } finally {
    await admin.disconnect();
  }
}

// --- Starting and stopping a broker with .ci/kafka.sh ---------------------------------------------------

export interface BrokerInstance {
  /** Ports on 127.0.0.1 and the folder of its storage, config, logs and pid file. */
  port: number;
  controllerPort: number;
  dataDir?: string;
  /** JVM heap options, for a second broker that should stay small. */
  heap?: string;
}

export interface BrokerControl {
  brokers: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** True when the broker is up and ready. */
  running(): Promise<boolean>;
  /** Stops the broker and deletes its storage (for a private broker's teardown). */
  reset(): Promise<void>;
}

function runScript(
  command: 'start' | 'stop' | 'status' | 'reset',
  env: NodeJS.ProcessEnv,
  timeoutMs = 180_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [SCRIPT, command],
      { env, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (error && typeof error.code !== 'number')
          reject(new Error(`.ci/kafka.sh ${command}: ${error.message}\n${stderr}`));
        else resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * Controls a broker through `.ci/kafka.sh start|stop|status`. Without an instance: the shared test broker
 * (the script's defaults, the one KAFKA_BROKERS points at). Stopping the shared broker disturbs every suite
 * that uses it at the same time, so outage tests should start a private instance on other ports.
 */
export function brokerControl(instance?: BrokerInstance): BrokerControl {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (instance) {
    env.HCP_KAFKA_PORT = String(instance.port);
    env.HCP_KAFKA_CONTROLLER_PORT = String(instance.controllerPort);
    if (instance.dataDir) env.HCP_KAFKA_DATA = instance.dataDir;
    if (instance.heap) env.HCP_KAFKA_HEAP = instance.heap;
  }
  const brokers = instance ? `127.0.0.1:${instance.port}` : (kafkaBrokers() ?? '127.0.0.1:29092');
  const check = (command: string, result: { code: number; stdout: string; stderr: string }) => {
    if (result.code !== 0)
      throw new Error(`.ci/kafka.sh ${command} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  };
  return {
    brokers,
    start: async () => check('start', await runScript('start', env)),
    stop: async () => check('stop', await runScript('stop', env)),
    running: async () => (await runScript('status', env)).code === 0,
    reset: async () => check('reset', await runScript('reset', env)),
  };
}

/** Stops the shared test broker (`.ci/kafka.sh stop`). */
export async function stopBroker(): Promise<void> {
  await brokerControl().stop();
}

/** Starts the shared test broker again (`.ci/kafka.sh start`) and waits until it is ready. */
export async function startBroker(): Promise<void> {
  await brokerControl().start();
}
