import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import {
  brokerControl,
  BrokerControl,
  consumeAll,
  ConsumedMessage,
  kafkaBrokers,
  uniqueName,
} from '../support/kafka-broker';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const brokers = kafkaBrokers();
const describeWithKafka = brokers ? describe : describe.skip;

/** De-duplicated by event id, the way consumers of hcp.audit.v1 and hcp.metering.v1 must. */
function unique(
  messages: ConsumedMessage[],
): Array<{ key: string | null; headers: Record<string, string>; value: any }> {
  const seen = new Map<string, { key: string | null; headers: Record<string, string>; value: any }>();
  for (const m of messages)
    if (!seen.has(m.headers['event-id']))
      seen.set(m.headers['event-id'], { key: m.key, headers: m.headers, value: JSON.parse(m.value!) });
  return [...seen.values()];
}

describeWithKafka(
  brokers ? 'audit and metering on Kafka' : 'audit and metering on Kafka (skipped: KAFKA_BROKERS is not set)',
  () => {
    let db: TestDatabase;
    let broker: BrokerControl;
    let brokerDir: string;
    let hcp: HcpProcess;
    let api: ApiClient;
    const topics = { audit: uniqueName('hcp.audit.v1'), metering: uniqueName('hcp.metering.v1') };

    beforeAll(async () => {
      // A broker of this suite's own: it is stopped mid-run, which must not disturb other suites.
      brokerDir = mkdtempSync(path.join(tmpdir(), 'hcp-kafka-e2e-'));
      const port = 29700 + Math.floor(Math.random() * 200) * 2;
      broker = brokerControl({ port, controllerPort: port + 1, dataDir: brokerDir, heap: '-Xms128m -Xmx384m' });
      await broker.start();
      db = await createTestDatabase();
      hcp = await HcpProcess.start({
        databaseUrl: db.url,
        env: {
          HCP_SIMULATOR_LATENCY_SCALE: '0',
          KAFKA_BROKERS: broker.brokers,
          HCP_KAFKA_AUDIT_TOPIC: topics.audit,
          HCP_KAFKA_METERING_TOPIC: topics.metering,
          HCP_KAFKA_AUDIT_PARTITIONS: '3',
          HCP_KAFKA_METERING_PARTITIONS: '3',
          HCP_KAFKA_PUBLISH_TIMEOUT_MS: '5000',
        },
      });
      api = new ApiClient(hcp.baseUrl, hcp.token('kay', { kproj: 'admin' }));
    }, 240_000);

    afterAll(async () => {
      await hcp?.stop();
      hcp?.removeDataDir();
      await db?.drop();
      await broker?.reset().catch(() => undefined);
      if (brokerDir) rmSync(brokerDir, { recursive: true, force: true });
    }, 120_000);

    const settle = (vmId: string, status: string) =>
      eventually(
        async () => ((await api.get(`/v1/projects/kproj/vms/${vmId}`)).body.status === status ? true : undefined),
        status,
        60_000,
      );

    it('publishes a lifecycle in order per project, each record once after de-duplication, and loses none while the broker is down', async () => {
      const created = await api.post('/v1/projects/kproj/vms', {
        name: 'streamed',
        zone: 'local',
        ...(await seededChoice(api)),
      });
      const vmId = created.body.resource_id;
      await jobFinished(api, 'kproj', created.body.job_id);
      await settle(vmId, 'running');

      await broker.stop();
      const stop = await api.post(`/v1/projects/kproj/vms/${vmId}/actions/stop`, { force: true });
      await jobFinished(api, 'kproj', stop.body.job_id);
      const start = await api.post(`/v1/projects/kproj/vms/${vmId}/actions/start`, {});
      await jobFinished(api, 'kproj', start.body.job_id);
      await broker.start();

      const del = await api.delete(`/v1/projects/kproj/vms/${vmId}`);
      await jobFinished(api, 'kproj', del.body.job_id, 60_000);

      const metering = unique(
        await consumeAll(topics.metering, {
          groupId: uniqueName('billing'),
          brokers: broker.brokers,
          timeoutMs: 90_000,
          until: (m) => unique(m).length >= 5,
        }),
      );
      expect(metering.map((m) => m.value.type)).toEqual([
        'vm.allocated',
        'vm.powered_on',
        'vm.powered_off',
        'vm.powered_on',
        'vm.deleted',
      ]);
      for (const m of metering) {
        expect(m.key).toBe('kproj');
        expect(m.value).toMatchObject({
          schema_version: 1,
          project_id: 'kproj',
          payload: { vm_id: vmId, zone: 'local' },
        });
        expect(m.headers['event-id']).toBe(m.value.event_id);
      }
      const apiMetering = (
        await new ApiClient(hcp.baseUrl, hcp.token('otto', {}, ['cloud-operator'])).get(
          `/v1/ops/metering?vm_id=${vmId}`,
        )
      ).body.items;
      expect(metering.map((m) => m.value.event_id)).toEqual(apiMetering.map((r: { event_id: string }) => r.event_id));

      // This project's messages (ops requests, like the metering query above, are keyed to the platform).
      const audit = unique(
        await consumeAll(topics.audit, {
          groupId: uniqueName('auditors'),
          brokers: broker.brokers,
          timeoutMs: 90_000,
          until: (m) => unique(m).filter((x) => x.value.payload.result === 'succeeded').length >= 4,
        }),
      ).filter((a) => a.key === 'kproj');
      const received = audit.filter((a) => a.value.payload.result === 'received').map((a) => a.value.payload.action);
      expect(received).toEqual([
        'POST /v1/projects/:project_id/vms',
        'POST /v1/projects/:project_id/vms/:vm_id/actions/stop',
        'POST /v1/projects/:project_id/vms/:vm_id/actions/start',
        'DELETE /v1/projects/:project_id/vms/:vm_id',
      ]);
      expect(audit.filter((a) => a.value.payload.result === 'succeeded').map((a) => a.value.payload.action)).toEqual([
        'vm.create',
        'vm.stop',
        'vm.start',
        'vm.delete',
      ]);
      expect(audit.every((a) => a.key === 'kproj' && a.headers['trace-id'] === a.value.trace_id)).toBe(true);
    });
  },
);
