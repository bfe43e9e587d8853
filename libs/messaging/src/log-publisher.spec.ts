import { createPublisher } from './create-publisher';
import { MessagingError } from './errors';
import { KafkaPublisher } from './kafka-publisher';
import { jsonLinesLogger, LogPublisher } from './log-publisher';
import { envelope } from './message-envelope';
import { messagingConfig } from './messaging-config';
import { SILENT_LOGGER } from './messaging-logger';
import { PublishObservation } from './publisher';

const message = (n: number) =>
  envelope({
    event_id: `evt-${n}`,
    type: 'audit.job_succeeded',
    occurred_at: '2026-01-01T00:00:00.000Z',
    project_id: 'proj-1',
    trace_id: `trace-${n}`,
    payload: { n },
  });

describe('LogPublisher', () => {
  it('writes each message as one JSON line with topic, key, headers and the envelope', async () => {
    const lines: string[] = [];
    const observations: PublishObservation[] = [];
    const publisher = new LogPublisher(messagingConfig(), {
      logger: jsonLinesLogger((l) => lines.push(l)),
      onPublish: (o) => observations.push(o),
    });
    await publisher.connect();
    await publisher.publish('audit', [message(1), message(2)]);
    await publisher.publish('metering', []);

    expect(lines).toHaveLength(2);
    for (const [i, line] of lines.entries()) {
      expect(line.endsWith('\n')).toBe(true);
      expect(line.trimEnd()).not.toContain('\n');
      const entry = JSON.parse(line);
      expect(entry).toMatchObject({
        level: 'info',
        component: 'messaging',
        topic: 'hcp.audit.v1',
        key: 'proj-1',
        msg: 'hcp.audit.v1 message',
      });
      expect(entry.headers).toMatchObject({
        'event-id': `evt-${i + 1}`,
        'trace-id': `trace-${i + 1}`,
        'schema-version': '1',
      });
      expect(entry.message).toEqual(message(i + 1));
    }
    expect(observations).toEqual([expect.objectContaining({ topic: 'audit', messages: 2, outcome: 'ok' })]);
  });

  it('reports the configured topics from ensureTopics without creating anything', async () => {
    const publisher = new LogPublisher(messagingConfig({ topics: { metering: { name: 'm.v1', partitions: 2 } } }), {
      logger: SILENT_LOGGER,
    });
    expect(await publisher.ensureTopics()).toEqual([
      { topic: 'audit', name: 'hcp.audit.v1', created: false, partitions: 6, retentionMs: null },
      { topic: 'metering', name: 'm.v1', created: false, partitions: 2, retentionMs: null },
    ]);
  });

  it('refuses invalid messages and use after disconnect', async () => {
    const lines: string[] = [];
    const publisher = new LogPublisher(messagingConfig(), { logger: jsonLinesLogger((l) => lines.push(l)) });
    await expect(publisher.publish('audit', [message(1), { ...message(2), occurred_at: 'now' }])).rejects.toMatchObject(
      { code: 'INVALID_MESSAGE' },
    );
    expect(lines).toHaveLength(0);
    await publisher.disconnect();
    await expect(publisher.publish('audit', [message(3)])).rejects.toBeInstanceOf(MessagingError);
  });
});

describe("LogPublisher below its logger's level", () => {
  it('writes no line when the logger drops info, still refusing what Kafka would refuse', async () => {
    const written: string[] = [];
    const observations: PublishObservation[] = [];
    const logger = {
      ...jsonLinesLogger((l) => written.push(l)),
      isLevelEnabled: (level: string) => level !== 'info' && level !== 'debug',
    };
    const publisher = new LogPublisher(messagingConfig(), { logger, onPublish: (o) => observations.push(o) });
    await publisher.publish('audit', [message(1), message(2)]);
    expect(written).toHaveLength(0);
    // Counted as handed over, as with a logger that writes them: the projection's checkpoint moves on.
    expect(observations).toEqual([expect.objectContaining({ topic: 'audit', messages: 2, outcome: 'ok' })]);
    await expect(publisher.publish('audit', [{ ...message(3), occurred_at: 'now' }])).rejects.toMatchObject({
      code: 'INVALID_MESSAGE',
    });
  });
});

describe('createPublisher', () => {
  it('chooses Kafka when brokers are configured and the log otherwise', async () => {
    expect(createPublisher(messagingConfig(), { logger: SILENT_LOGGER }).kind).toBe('log');
    const kafka = createPublisher(messagingConfig({ brokers: ['127.0.0.1:1'] }), { logger: SILENT_LOGGER });
    expect(kafka).toBeInstanceOf(KafkaPublisher);
    await kafka.disconnect();
  });
});

describe('KafkaPublisher without a broker', () => {
  it('needs brokers and at least one retry', () => {
    expect(() => new KafkaPublisher(messagingConfig())).toThrow(/at least one broker/);
    expect(() => new KafkaPublisher(messagingConfig({ brokers: ['127.0.0.1:1'], retries: 0 }))).toThrow(/retries/);
  });

  it('validates a batch before connecting, and an empty batch needs no broker', async () => {
    const publisher = new KafkaPublisher(messagingConfig({ brokers: ['127.0.0.1:1'] }));
    await expect(publisher.publish('audit', [])).resolves.toBeUndefined();
    await expect(publisher.publish('audit', [{ ...message(1), event_id: '' }])).rejects.toMatchObject({
      code: 'INVALID_MESSAGE',
    });
    await publisher.disconnect();
    await expect(publisher.publish('audit', [message(1)])).rejects.toMatchObject({ code: 'PUBLISH_FAILED' });
  });
});
