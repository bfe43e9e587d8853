import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { brokerList, consumeAll, kafkaBrokers, uniqueName } from '../support/kafka-broker';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const CONSUMER = path.join(__dirname, '..', '..', 'examples', 'billing-consumer', 'main.js');
const brokers = kafkaBrokers();
// CI runs a broker (.ci/kafka.sh): there a missing one is a failure, not a skip.
const runs = brokers !== null || process.env.CI === 'true';
const describeWithKafka = runs ? describe : describe.skip;

/** The example billing consumer as a real process: its JSON log lines, and a way to wait on them. */
class BillingConsumer {
  readonly lines: Array<Record<string, any>> = [];
  private constructor(readonly child: ChildProcess) {
    let rest = '';
    child.stdout?.on('data', (d: Buffer) => {
      const text = rest + d.toString();
      const parts = text.split('\n');
      rest = parts.pop() ?? '';
      for (const part of parts) if (part.trim()) this.lines.push(JSON.parse(part));
    });
    child.stderr?.on('data', (d: Buffer) => this.lines.push({ event: 'stderr', text: d.toString() }));
  }

  static start(args: string[]): BillingConsumer {
    return new BillingConsumer(
      spawn(process.execPath, [CONSUMER, 'consume', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
  }

  until(what: string, check: (lines: Array<Record<string, any>>) => boolean, timeoutMs = 60_000): Promise<true> {
    return eventually(
      async () => {
        if (this.child.exitCode !== null) throw new Error(`the consumer exited: ${JSON.stringify(this.lines)}`);
        return check(this.lines) ? true : undefined;
      },
      what,
      timeoutMs,
    );
  }

  /** Dies at once, whatever it was doing (no disconnect, no commit). */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}

describeWithKafka(
  brokers ? 'usage report and billing consumer' : 'usage report and billing consumer (needs KAFKA_BROKERS)',
  () => {
    let db: TestDatabase;
    let hcp: HcpProcess;
    let tenant: ApiClient;
    let ops: ApiClient;
    let dir: string;
    const consumers: BillingConsumer[] = [];
    const topic = uniqueName('hcp.metering.v1');

    beforeAll(async () => {
      if (!brokers) throw new Error('KAFKA_BROKERS is not set: CI runs a broker (.ci/kafka.sh)');
      dir = mkdtempSync(path.join(tmpdir(), 'hcp-billing-'));
      db = await createTestDatabase('hcp_usage_billing');
      hcp = await HcpProcess.start({
        databaseUrl: db.url,
        env: {
          HCP_SIMULATOR_LATENCY_SCALE: '0',
          KAFKA_BROKERS: brokers,
          HCP_KAFKA_METERING_TOPIC: topic,
          HCP_KAFKA_AUDIT_TOPIC: uniqueName('hcp.audit.v1'),
          HCP_KAFKA_METERING_PARTITIONS: '3',
          HCP_KAFKA_AUDIT_PARTITIONS: '1',
        },
      });
      tenant = new ApiClient(hcp.baseUrl, hcp.token('bea', { bill: 'admin', bill2: 'admin' }));
      ops = new ApiClient(hcp.baseUrl, hcp.token('otto', {}, ['cloud-operator', 'infra-admin']));
    }, 240_000);

    afterAll(async () => {
      for (const c of consumers) await c.kill();
      await hcp?.stop();
      hcp?.removeDataDir();
      await db?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    const usage = (query: string) => ops.get(`/v1/ops/usage?${query}`);

    it('refuses a period that is not one', async () => {
      const from = '2026-12-01T00:00:00Z';
      const refused = async (query: string) => {
        const res = await usage(query);
        return [res.status, res.body.error?.code];
      };
      expect(await refused(`from=${from}&to=${from}`)).toEqual([400, 'INVALID_REQUEST']);
      expect(await refused(`from=${from}&to=2026-11-30T00:00:00Z`)).toEqual([400, 'INVALID_REQUEST']);
      expect(await refused(`from=${from}&to=2028-01-01T00:00:00Z`)).toEqual([400, 'INVALID_REQUEST']);
      expect(await refused(`from=2026-12-01&to=2026-12-02T00:00:00Z`)).toEqual([400, 'INVALID_REQUEST']);
      expect(await refused(`from=${from}`)).toEqual([400, 'INVALID_REQUEST']);
      expect(await refused(`from=${from}&to=2026-12-02T00:00:00Z&detail=all`)).toEqual([400, 'INVALID_REQUEST']);
      const tenantAsks = await tenant.get(`/v1/ops/usage?from=${from}&to=2026-12-02T00:00:00Z`);
      expect([tenantAsks.status, tenantAsks.body.error.code]).toEqual([403, 'FORBIDDEN']);
      const empty = await usage(`from=${from}&to=2026-12-02T00:00:00%2B01:00&project=nobody`);
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({
        project: 'nobody',
        from: '2026-12-01T00:00:00.000Z',
        to: '2026-12-01T23:00:00.000Z',
        measured_until: '2026-12-01T23:00:00.000Z',
        groups: [],
        totals: {
          vms: 0,
          running_seconds: 0,
          powered_off_seconds: 0,
          vm_hours: 0,
          vcpu_hours: 0,
          gib_hours: 0,
          powered_off_hours: 0,
        },
      });
    });

    it('agrees with a billing consumer of hcp.metering.v1 to the millisecond, also after it was killed mid-topic', async () => {
      // Two zones: the seeded one and a second over the same clusters.
      const clusters = (await ops.get('/v1/ops/clusters')).body.items.map((c: { id: string }) => c.id);
      const zone = await ops.post('/v1/ops/zones', { id: 'lab', name: 'Lab', cluster_ids: clusters, policy: 'pack' });
      expect(zone.status).toBe(201);
      await eventually(async () => {
        const zones = (await tenant.get('/v1/zones')).body.items as Array<{ id: string }>;
        return zones.some((z) => z.id === 'lab') ? true : undefined;
      }, 'zone lab offered');
      const { image_id, flavor_id: small } = await seededChoice(tenant);
      const flavors = (await tenant.get('/v1/flavors')).body.items as Array<{ id: string; name: string }>;
      const medium = flavors.find((f) => f.name === 'medium')!.id;

      const done = async (project: string, res: { status: number; body: any }) => {
        expect(res.status).toBe(202);
        const job = await jobFinished(tenant, project, res.body.job_id, 60_000);
        expect(job.status).toBe('succeeded');
        return res.body.resource_id as string;
      };
      const create = (project: string, name: string, zoneId: string, flavor: string, powerOn = true) =>
        tenant
          .post(`/v1/projects/${project}/vms`, {
            name,
            zone: zoneId,
            image_id,
            flavor_id: flavor,
            power_on: powerOn,
          })
          .then((res) => done(project, res));
      const act = (project: string, vm: string, action: 'start' | 'stop') =>
        tenant
          .post(`/v1/projects/${project}/vms/${vm}/actions/${action}`, action === 'stop' ? { force: true } : {})
          .then((res) => done(project, res));
      const remove = (project: string, vm: string) =>
        tenant.delete(`/v1/projects/${project}/vms/${vm}`).then((res) => done(project, res));

      // A compressed day: the period [from, to) cuts through every lifecycle.
      const a = await create('bill', 'a', 'local', small);
      const b = await create('bill', 'b', 'lab', medium);
      const from = new Date().toISOString();
      await act('bill', a, 'stop');
      const c = await create('bill', 'c', 'lab', small, false);
      const d = await create('bill2', 'd', 'local', medium);
      await act('bill', a, 'start');
      await remove('bill', b);
      await act('bill2', d, 'stop');
      const to = new Date().toISOString();
      await remove('bill', c);
      await act('bill2', d, 'start');

      // Every outcome metered: HCP's report reads the metering projection, the consumer the topic.
      const expected: Record<string, string[]> = {
        [a]: ['vm.allocated', 'vm.powered_on', 'vm.powered_off', 'vm.powered_on'],
        [b]: ['vm.allocated', 'vm.powered_on', 'vm.deleted'],
        [c]: ['vm.allocated', 'vm.deleted'],
        [d]: ['vm.allocated', 'vm.powered_on', 'vm.powered_off', 'vm.powered_on'],
      };
      const total = Object.values(expected).flat().length;
      await eventually(async () => {
        const items = (await ops.get('/v1/ops/metering?limit=200')).body.items as Array<{
          vm_id: string;
          kind: string;
        }>;
        const kinds = (vm: string) => items.filter((r) => r.vm_id === vm).map((r) => r.kind);
        return Object.entries(expected).every(([vm, k]) => JSON.stringify(kinds(vm)) === JSON.stringify(k))
          ? true
          : undefined;
      }, 'every outcome metered');

      const period = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
      const hcpReport = await usage(`${period}&detail=vm`);
      expect(hcpReport.status).toBe(200);
      const line = (vm: string) => hcpReport.body.vms.find((v: { vm_id: string }) => v.vm_id === vm);
      const periodSeconds = (Date.parse(to) - Date.parse(from)) / 1000;
      // a lived through the whole period, stopped for a while; the others began or ended inside it.
      expect(line(a).running_seconds + line(a).powered_off_seconds).toBeCloseTo(periodSeconds, 3);
      expect(line(a).powered_off_seconds).toBeGreaterThan(0);
      expect(line(b).powered_off_seconds).toBe(0);
      expect(line(b).running_seconds).toBeLessThan(periodSeconds);
      expect(line(c).running_seconds).toBe(0);
      expect(line(c).powered_off_seconds).toBeGreaterThan(0);
      expect(line(d).running_seconds).toBeGreaterThan(0);
      expect(line(d).powered_off_seconds).toBeGreaterThan(0);
      expect(hcpReport.body.groups.map((g: any) => [g.project_id, g.zone, g.flavor_id, g.vms])).toEqual(
        [
          ['bill', 'lab', medium, 1],
          ['bill', 'lab', small, 1],
          ['bill', 'local', small, 1],
          ['bill2', 'local', medium, 1],
        ].sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1)),
      );

      // At least once on the wire: copies of records already published (same event ids) go on the topic too.
      const published = await consumeAll(topic, {
        groupId: uniqueName('peek'),
        brokers: brokers!,
        until: (m) => new Set(m.map((x) => x.headers['event-id'])).size >= total,
      });
      const kafka = new Kafka({ clientId: 'usage-e2e', brokers: brokerList(brokers!), logLevel: logLevel.NOTHING });
      const producer = kafka.producer();
      await producer.connect();
      const copies = published.slice(0, 4);
      await producer.send({
        topic,
        messages: copies.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
      });
      await producer.disconnect();

      // The consumer stores 5 records, then dies before committing the batch that holds them.
      const store = path.join(dir, 'records.jsonl');
      const group = uniqueName('billing');
      const args = ['--brokers', brokers!, '--topic', topic, '--group', group, '--store', store];
      const first = BillingConsumer.start([...args, '--pause-after', '5']);
      consumers.push(first);
      await first.until('5 records stored', (lines) => lines.some((l) => l.event === 'paused'));
      await first.kill();
      const stored = () => readFileSync(store, 'utf8').split('\n').filter(Boolean);
      expect(stored()).toHaveLength(5);

      // Started again, it reads what it stored, is handed the uncommitted records again, and skips the known.
      const second = BillingConsumer.start(args);
      consumers.push(second);
      const duplicates = () =>
        [...first.lines, ...second.lines].filter((l) => l.event === 'batch').reduce((n, l) => n + l.duplicates, 0);
      await second.until(
        'every record stored and every copy met',
        () => stored().length >= total && duplicates() >= copies.length,
      );
      expect(second.lines[0]).toMatchObject({ event: 'opened', records: 5 });
      const ids = stored().map((l) => JSON.parse(l).event_id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(total);

      const report = async (extra: string[]) =>
        JSON.parse(
          (
            await promisify(execFile)(process.execPath, [
              CONSUMER,
              'report',
              '--store',
              store,
              '--from',
              from,
              '--to',
              to,
              ...extra,
            ])
          ).stdout,
        );
      expect(await report(['--detail'])).toEqual(hcpReport.body);
      expect(await report(['--project', 'bill'])).toEqual((await usage(`${period}&project=bill`)).body);
      expect(await report(['--project', 'bill2'])).toEqual((await usage(`${period}&project=bill2`)).body);
    }, 300_000);
  },
);
