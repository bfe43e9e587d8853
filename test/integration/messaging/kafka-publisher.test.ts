import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  envelope,
  KafkaPublisher,
  MessageEnvelope,
  MessagingConfig,
  messagingConfig,
  MessagingError,
  MessagingLogger,
  parseEnvelope,
  PublishObservation,
} from '../../../libs/messaging/src';
import {
  brokerControl,
  BrokerControl,
  brokerList,
  committedOffsets,
  consumeAll,
  ConsumedMessage,
  endOffsets,
  kafkaBrokers,
  uniqueName,
} from '../../support/kafka-broker';

/**
 * KafkaPublisher against a real Apache Kafka broker (KRaft, started by `.ci/kafka.sh`), read back with
 * real consumer groups. Topic names are unique per run: the broker keeps its topics between runs.
 */
const brokers = kafkaBrokers();
const describeKafka = brokers ? describe : describe.skip;

function configFor(brokerAddress: string, overrides: Partial<MessagingConfig> = {}): MessagingConfig {
  const run = uniqueName('t');
  return messagingConfig({
    brokers: brokerList(brokerAddress),
    clientId: 'hcp-test',
    topics: {
      audit: { name: `hcp.audit.v1.${run}`, partitions: 3, retentionMs: 3_600_000 },
      metering: { name: `hcp.metering.v1.${run}`, partitions: 2, retentionMs: 7_200_000 },
    },
    ...overrides,
  });
}

let sequence = 0;
function message(
  projectId: string | null,
  n: number,
  extra: Partial<MessageEnvelope> = {},
): MessageEnvelope<{ n: number; project: string | null }> {
  sequence += 1;
  return envelope({
    event_id: `evt-${process.pid}-${sequence}`,
    type: 'audit.request_received',
    occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, n)),
    project_id: projectId,
    trace_id: `trace-${sequence}`,
    payload: { n, project: projectId },
    ...extra,
  }) as MessageEnvelope<{ n: number; project: string | null }>;
}

/** First occurrence of each event id, in arrival order: what a de-duplicating consumer keeps. */
function dedupe(messages: ConsumedMessage[]): ConsumedMessage[] {
  const seen = new Set<string>();
  return messages.filter((m) => {
    const id = m.headers['event-id'];
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

function recordingLogger(): MessagingLogger & { lines: Array<{ level: string; message: string; fields: object }> } {
  const lines: Array<{ level: string; message: string; fields: object }> = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push({ level, message, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describeKafka(
  brokers
    ? `KafkaPublisher on the real Kafka broker at ${brokers}`
    : 'KafkaPublisher on a real Kafka broker (SKIPPED: KAFKA_BROKERS is not set; run `bash .ci/kafka.sh` and export the KAFKA_BROKERS it prints)',
  () => {
    const open: KafkaPublisher[] = [];
    const publisher = (
      config: MessagingConfig,
      options: { logger?: MessagingLogger; onPublish?: (o: PublishObservation) => void } = {},
    ): KafkaPublisher => {
      const p = new KafkaPublisher(config, options);
      open.push(p);
      return p;
    };

    afterAll(async () => {
      await Promise.all(open.map((p) => p.disconnect()));
    });

    it('ensureTopics creates both topics with the configured partitions and retention, and is idempotent', async () => {
      const config = configFor(brokers as string);
      const p = publisher(config);

      const first = await p.ensureTopics();
      expect(first).toEqual([
        { topic: 'audit', name: config.topics.audit.name, created: true, partitions: 3, retentionMs: 3_600_000 },
        { topic: 'metering', name: config.topics.metering.name, created: true, partitions: 2, retentionMs: 7_200_000 },
      ]);
      expect((await endOffsets(config.topics.audit.name)).size).toBe(3);
      expect((await endOffsets(config.topics.metering.name)).size).toBe(2);

      const again = await p.ensureTopics();
      expect(again.map((t) => [t.name, t.created, t.partitions])).toEqual([
        [config.topics.audit.name, false, 3],
        [config.topics.metering.name, false, 2],
      ]);
    });

    it('an existing topic with other partitions is left alone and reported', async () => {
      const config = configFor(brokers as string);
      await publisher(config).ensureTopics();
      const logger = recordingLogger();
      const other = publisher(
        { ...config, topics: { ...config.topics, audit: { ...config.topics.audit, partitions: 5 } } },
        { logger },
      );

      const status = await other.ensureTopics();
      expect(status[0]).toMatchObject({ created: false, partitions: 3 });
      expect(
        logger.lines.some((l) => l.level === 'warn' && /has 3 partitions, not the configured 5/.test(l.message)),
      ).toBe(true);
    });

    it('publishes records a real consumer group reads: key = project id, JSON envelope value, event-id / trace-id / schema-version headers', async () => {
      const config = configFor(brokers as string);
      const observations: PublishObservation[] = [];
      const p = publisher(config, { onPublish: (o) => observations.push(o) });
      await p.ensureTopics();
      const sent = [
        message('proj-a', 1),
        message('proj-b', 2),
        message(null, 3, { trace_id: null, type: 'audit.ops_request' }),
      ];

      await p.publish('audit', sent);

      const groupId = uniqueName('hcp-test-group');
      const received = await consumeAll(config.topics.audit.name, {
        groupId,
        until: (m) => m.length >= 3,
        timeoutMs: 30_000,
      });
      expect(received).toHaveLength(3);
      const byId = new Map(received.map((m) => [m.headers['event-id'], m]));
      for (const s of sent) {
        const r = byId.get(s.event_id);
        expect(r).toBeDefined();
        expect(r!.key).toBe(s.project_id ?? '_platform');
        expect(r!.headers['schema-version']).toBe('1');
        expect(r!.headers['event-type']).toBe(s.type);
        if (s.trace_id === null) expect(r!.headers['trace-id']).toBeUndefined();
        else expect(r!.headers['trace-id']).toBe(s.trace_id);
        const value = parseEnvelope(r!.value);
        expect(value).toEqual(s);
        expect(JSON.parse(r!.value as string).schema_version).toBe(1);
      }
      expect(observations).toEqual([
        expect.objectContaining({ topic: 'audit', topicName: config.topics.audit.name, messages: 3, outcome: 'ok' }),
      ]);

      // A real consumer group: its offsets were committed up to the end of every partition.
      const committed = await committedOffsets(config.topics.audit.name, groupId);
      const ends = await endOffsets(config.topics.audit.name);
      for (const [partition, end] of ends) {
        if (end !== '0') expect(committed.get(partition)).toBe(end);
      }
    });

    it('keeps per-project order across partitions and across queued publish calls', async () => {
      const config = configFor(brokers as string, { maxBatchMessages: 7 });
      config.topics.metering.partitions = 4;
      const p = publisher(config);
      await p.ensureTopics();

      const projects = ['proj-1', 'proj-2', 'proj-3', 'proj-4', 'proj-5'];
      const all: MessageEnvelope[] = [];
      for (let n = 0; n < 40; n++)
        all.push({ ...message(projects[n % projects.length], n), type: 'metering.vm_powered_on' });
      const batches = [all.slice(0, 9), all.slice(9, 10), all.slice(10, 25), all.slice(25, 40)];
      // Not awaited one by one: the publisher must still send them in call order.
      await Promise.all(batches.map((b) => p.publish('metering', b)));

      const received = dedupe(
        await consumeAll(config.topics.metering.name, {
          groupId: uniqueName('hcp-test-order'),
          until: (m) => dedupe(m).length >= all.length,
          timeoutMs: 30_000,
        }),
      );
      expect(received).toHaveLength(all.length);
      for (const project of projects) {
        const expected = all.filter((m) => m.project_id === project).map((m) => m.event_id);
        const got = received.filter((m) => m.key === project);
        expect(got.map((m) => m.headers['event-id'])).toEqual(expected);
        expect(new Set(got.map((m) => m.partition)).size).toBe(1);
        const offsets = got.map((m) => BigInt(m.offset));
        expect([...offsets].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(offsets);
      }
      expect(new Set(received.map((m) => m.partition)).size).toBeGreaterThan(1);
    });

    it('publish resolves only once the broker has the messages: the end offsets already count them', async () => {
      const config = configFor(brokers as string);
      const p = publisher(config);
      await p.ensureTopics();
      const before = [...(await endOffsets(config.topics.audit.name)).values()].reduce((a, b) => a + Number(b), 0);

      await p.publish('audit', [
        message('proj-x', 1),
        message('proj-y', 2),
        message('proj-z', 3),
        message('proj-x', 4),
      ]);

      const after = [...(await endOffsets(config.topics.audit.name)).values()].reduce((a, b) => a + Number(b), 0);
      expect(after - before).toBe(4);
    });

    it('refuses an invalid message before sending anything of the batch', async () => {
      const config = configFor(brokers as string);
      const p = publisher(config);
      await p.ensureTopics();

      const bad = { ...message('proj-a', 2), occurred_at: 'yesterday' };
      await expect(p.publish('audit', [message('proj-a', 1), bad])).rejects.toMatchObject({ code: 'INVALID_MESSAGE' });
      const ends = await endOffsets(config.topics.audit.name);
      expect([...ends.values()].every((o) => o === '0')).toBe(true);
    });

    it('rejects a publish to a topic that does not exist (auto-creation is off) instead of resolving', async () => {
      const config = configFor(brokers as string, { retries: 2, publishTimeoutMs: 20_000 });
      const p = publisher(config);
      await expect(p.publish('audit', [message('proj-a', 1)])).rejects.toBeInstanceOf(MessagingError);
    });

    describe('a broker outage (a private broker on other ports, stopped and started with .ci/kafka.sh)', () => {
      let dataDir: string;
      let control: BrokerControl;

      beforeAll(async () => {
        dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-kafka-outage-'));
        const port = 29192 + Math.floor(Math.random() * 300) * 2;
        control = brokerControl({ port, controllerPort: port + 1, dataDir, heap: '-Xms128m -Xmx384m' });
        await control.start();
      }, 180_000);

      afterAll(async () => {
        await control?.reset().catch(() => undefined);
        if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      }, 60_000);

      it('delays messages while the broker is down and loses none once it is back', async () => {
        const config = configFor(control.brokers, {
          retries: 3,
          publishTimeoutMs: 8_000,
          connectionTimeoutMs: 1_000,
          requestTimeoutMs: 5_000,
        });
        const observations: PublishObservation[] = [];
        const p = publisher(config, { onPublish: (o) => observations.push(o) });
        await p.ensureTopics();

        const before = [message('proj-o', 1), message('proj-o', 2), message('proj-p', 3)];
        await p.publish('audit', before);

        await control.stop();
        expect(await control.running()).toBe(false);

        // The caller's checkpoint stays put: publish rejects rather than resolving without an ack.
        const during = [message('proj-o', 4), message('proj-p', 5), message('proj-o', 6)];
        const started = Date.now();
        let outcome: 'resolved' | MessagingError | unknown = 'resolved';
        try {
          await p.publish('audit', during);
        } catch (error) {
          outcome = error;
        }
        expect(outcome).toBeInstanceOf(MessagingError);
        expect(['PUBLISH_FAILED', 'PUBLISH_TIMEOUT']).toContain((outcome as MessagingError).code);
        expect((outcome as MessagingError).retriable).toBe(true);
        expect(Date.now() - started).toBeLessThan(config.publishTimeoutMs + 5_000);
        expect(observations.at(-1)).toMatchObject({ outcome: 'failed', messages: 3 });

        await control.start();

        // What a projection runner does: retry the same events from its checkpoint until acknowledged.
        const deadline = Date.now() + 60_000;
        for (;;) {
          try {
            await p.publish('audit', during);
            break;
          } catch (error) {
            if (Date.now() > deadline) throw error;
            await new Promise((r) => setTimeout(r, 500));
          }
        }
        const after = [message('proj-p', 7), message('proj-o', 8)];
        await p.publish('audit', after);

        const expected = [...before, ...during, ...after];
        const received = await consumeAll(config.topics.audit.name, {
          groupId: uniqueName('hcp-test-outage'),
          brokers: control.brokers,
          until: (m) => dedupe(m).length >= expected.length,
          timeoutMs: 60_000,
        });
        const unique = dedupe(received);
        expect(unique.map((m) => m.headers['event-id']).sort()).toEqual(expected.map((m) => m.event_id).sort());
        for (const project of ['proj-o', 'proj-p']) {
          expect(unique.filter((m) => m.key === project).map((m) => m.headers['event-id'])).toEqual(
            expected.filter((m) => m.project_id === project).map((m) => m.event_id),
          );
        }
        // At least once: a duplicate can only be a message of the batch that failed during the outage.
        const duringIds = new Set(during.map((m) => m.event_id));
        for (const d of received.filter(
          (m, i) => received.findIndex((x) => x.headers['event-id'] === m.headers['event-id']) !== i,
        )) {
          expect(duringIds.has(d.headers['event-id'])).toBe(true);
        }
      }, 180_000);
    });
  },
);
