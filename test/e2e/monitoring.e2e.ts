import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import {
  describeWithPrometheus,
  MONITORING_DIR,
  PrometheusServer,
  QueryAnswer,
} from '../integration/monitoring/prometheus-binaries';
import { ApiClient, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { freePort, HcpProcess } from '../support/hcp-process';
import { kafkaBrokers, uniqueName } from '../support/kafka-broker';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const RULES = path.join(MONITORING_DIR, 'prometheus', 'hcp.rules.yaml');
const DASHBOARD = path.join(MONITORING_DIR, 'grafana', 'hcp-dashboard.json');

/** The rate window the test puts for Grafana's $__rate_interval: 30 scrapes at the 1 s interval below. */
const RATE_INTERVAL = '30s';
/** The data source variable every panel names (Grafana syntax, not a template string). */
const DS_VARIABLE = ['$', '{DS_PROMETHEUS}'].join('');
/** How long the queries may take to all return series (scrapes, rule evaluations, rate windows). */
const SERIES_DEADLINE_MS = 180_000;

interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Array<{ refId: string; expr: string; datasource?: { uid: string } }>;
}
interface Dashboard {
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown; definition?: string }> };
}
interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}

const dashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const rules = (): Rule[] =>
  (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);

/**
 * The metric names an expression reads: HCP's own, the Node.js process defaults and `up`, outside label
 * matchers and strings (label names and values never count).
 */
function metricNames(expr: string): string[] {
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\{[^}]*\}/g, '{}');
  const found = bare.match(
    /\b(?:(?:hcp|route|route_status)[_:][a-zA-Z0-9_:]*|nodejs_[a-z0-9_]+|process_[a-z0-9_]+|up)\b/g,
  );
  return [...new Set(found ?? [])];
}

describe('the Grafana dashboard as written', () => {
  it('is a current-schema dashboard whose every query uses the DS_PROMETHEUS data source variable', () => {
    const d = dashboard();
    expect(d.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(d.templating.list.find((v) => v.name === 'DS_PROMETHEUS')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    const panels = d.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(20);
    for (const panel of panels) {
      expect({ panel: panel.title, uid: panel.datasource?.uid }).toEqual({
        panel: panel.title,
        uid: DS_VARIABLE,
      });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.expr.trim()).not.toBe('');
        expect(target.datasource?.uid).toBe(DS_VARIABLE);
      }
    }
  });
});

describeWithPrometheus('monitoring against a running HCP and a real Prometheus', (bins) => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let prometheus: PrometheusServer;
  let instance: string;
  let seededProvider: string;
  let unreachableProvider: string;
  let ops: ApiClient;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_e2e_monitoring');
    const brokers = kafkaBrokers();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0.05',
        // A reboot fails with a retryable error, once retried: retries and failed jobs have series.
        HCP_SIMULATOR_FAULTS: 'reboot=fail',
        HCP_JOB_MAX_ATTEMPTS: '2',
        HCP_JOB_RETRY_BACKOFF_MS: '100',
        HCP_PROVIDER_HEALTH_INTERVAL_MS: '2000',
        HCP_RECONCILE_INTERVAL_MS: '2000',
        // Audit and metering go to the real broker when there is one (CI), to the log otherwise.
        ...(brokers
          ? {
              KAFKA_BROKERS: brokers,
              HCP_KAFKA_AUDIT_TOPIC: uniqueName('hcp-monitoring-audit'),
              HCP_KAFKA_METERING_TOPIC: uniqueName('hcp-monitoring-metering'),
            }
          : {}),
      },
    });
    instance = new URL(hcp.baseUrl).host;
    const port = await freePort();
    prometheus = await PrometheusServer.start(
      bins,
      port,
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'rule_files:',
        `  - ${JSON.stringify(RULES)}`,
        'scrape_configs:',
        '  - job_name: hcp',
        '    static_configs:',
        `      - targets: [${JSON.stringify(instance)}]`,
        '',
      ].join('\n'),
    );

    // Traffic enough for every panel's series: a create that succeeds, a reboot that fails after a
    // retry, refused requests, ops reading and checking a provider.
    const api = new ApiClient(hcp.baseUrl, hcp.token('alice', { demo: 'admin' }));
    ops = new ApiClient(hcp.baseUrl, hcp.token('ops-anna', {}, ['infra-admin', 'cloud-operator']));
    const created = await api.post('/v1/projects/demo/vms', {
      name: 'watched-1',
      zone: 'local',
      ...(await seededChoice(api)),
    });
    expect(created.status).toBe(202);
    expect(await jobFinished(api, 'demo', created.body.job_id)).toMatchObject({ status: 'succeeded' });
    const reboot = await api.post(`/v1/projects/demo/vms/${created.body.resource_id}/actions/reboot`, { force: true });
    expect(reboot.status).toBe(202);
    expect(await jobFinished(api, 'demo', reboot.body.job_id)).toMatchObject({
      status: 'failed',
      error: { code: 'PROVIDER_UNAVAILABLE' },
    });
    expect((await api.as(undefined).get('/v1/projects/demo/vms')).status).toBe(401);
    expect((await api.get('/v1/projects/elsewhere/vms')).status).toBe(404);
    const providers = await ops.get('/v1/ops/providers');
    expect(providers.status).toBe(200);
    seededProvider = providers.body.items[0].id;
    expect((await ops.post(`/v1/ops/providers/${seededProvider}/check`)).status).toBe(200);
    // A Proxmox provider on a closed loopback port: registered, and unreachable at its first check.
    const unreachable = await ops.post('/v1/ops/providers', {
      name: 'pve-away',
      type: 'proxmox',
      endpoint: 'https://127.0.0.1:1',
      credentials: { api_token: 'hcp@pve!monitoring=0b9f2c3e-5d1a-4c55-9a0e-0123456789ab' },
    });
    expect(unreachable.status).toBe(201);
    unreachableProvider = unreachable.body.id;
  }, 120_000);

  afterAll(async () => {
    await prometheus?.stop();
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  /**
   * Sends every expression until each one is answered as `accept` says, or the deadline passes; returns
   * what was still wrong at the end (empty when all were fine), with Prometheus's own words.
   */
  async function untilAllAnswer(
    exprs: string[],
    accept: (answer: QueryAnswer) => boolean,
  ): Promise<Array<{ expr: string; answer: unknown }>> {
    const deadline = Date.now() + SERIES_DEADLINE_MS;
    let pending = [...new Set(exprs)];
    let wrong: Array<{ expr: string; answer: unknown }> = [];
    for (;;) {
      wrong = [];
      for (const expr of pending) {
        const answer = await prometheus.query(expr);
        if (!accept(answer))
          wrong.push({
            expr,
            answer: answer.status === 'error' ? answer.error : `${answer.data?.result.length} series`,
          });
      }
      pending = wrong.map((w) => w.expr);
      if (pending.length === 0 || Date.now() > deadline) return wrong;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  const returnsSeries = (answer: QueryAnswer) => answer.status === 'success' && (answer.data?.result.length ?? 0) > 0;

  it('scrapes HCP, and the dashboard instance variable lists it', async () => {
    const wrong = await untilAllAnswer([`up{job="hcp", instance="${instance}"} == 1`], returnsSeries);
    expect(wrong).toEqual([]);
    const variable = dashboard().templating.list.find((v) => v.name === 'instance');
    expect(variable?.definition).toBe('label_values(up{job="hcp"}, instance)');
    const values = await prometheus.get<{ status: string; data: string[] }>(
      `/api/v1/label/instance/values?${new URLSearchParams({ 'match[]': 'up{job="hcp"}' })}`,
    );
    expect(values).toEqual({ status: 'success', data: [instance] });
  });

  it("answers every query of the dashboard with series (Grafana's variables put in)", async () => {
    const exprs = dashboard()
      .panels.flatMap((p) => p.targets ?? [])
      .map((t) => t.expr.replaceAll('$__rate_interval', RATE_INTERVAL).replaceAll('$instance', instance));
    expect(exprs.length).toBeGreaterThan(25);
    expect(exprs.filter((e) => e.includes('$'))).toEqual([]);
    const wrong = await untilAllAnswer(exprs, returnsSeries);
    expect(wrong).toEqual([]);
  }, 240_000);

  it('evaluates every rule: recording rules record series, and every metric an alert reads exists', async () => {
    const all = rules();
    const recorded = all.filter((r) => r.record).flatMap((r) => [r.expr, r.record as string]);
    const read = [...new Set(all.filter((r) => r.alert).flatMap((r) => metricNames(r.expr)))];
    // Metrics the alerts read, found by name: the alerts cannot read a name HCP does not serve.
    expect(read).toEqual(expect.arrayContaining(['hcp_job_queue_oldest_due_seconds', 'hcp_provider_up', 'up']));
    const wrong = await untilAllAnswer([...recorded, ...read], returnsSeries);
    expect(wrong).toEqual([]);
    // Each alert's whole expression parses and evaluates (a healthy HCP fires none of them, so no series).
    const unparsed = await untilAllAnswer(
      all.filter((r) => r.alert).map((r) => r.expr),
      (answer) => answer.status === 'success',
    );
    expect(unparsed).toEqual([]);
  }, 240_000);

  it('counts the traffic it was given: each job once, with its duration, retry and outcome', async () => {
    const wrong = await untilAllAnswer(
      [
        'sum(hcp_job_duration_seconds_count{type="vm.create", outcome="succeeded"}) == 1',
        'sum(hcp_job_duration_seconds_count{type="vm.reboot", outcome="failed"}) == 1',
        'sum(hcp_jobs_finished_total{type="vm.reboot", outcome="PROVIDER_UNAVAILABLE"}) == 1',
        'sum(hcp_job_retries_total{code="PROVIDER_UNAVAILABLE"}) == 1',
        'max(hcp_job_queue_jobs{state="due"}) == 0',
        'sum(hcp_http_request_duration_seconds_count{status="401"}) >= 1',
        'sum(hcp_published_messages_total{sink="audit"}) > 0',
        'sum(hcp_publish_failures_total{sink="audit"}) == 0',
      ],
      returnsSeries,
    );
    expect(wrong).toEqual([]);
  });

  it('shows a provider HCP reaches as up (1) and one it cannot reach as down (0)', async () => {
    const wrong = await untilAllAnswer(
      [
        `max by (provider) (hcp_provider_up{provider="${seededProvider}"}) == 1`,
        `max by (provider) (hcp_provider_up{provider="${unreachableProvider}"}) == 0`,
      ],
      returnsSeries,
    );
    expect(wrong).toEqual([]);
  });

  it('loads every rule, fires none of them for a healthy HCP, and holds the unreachable provider as pending', async () => {
    const loaded = await prometheus.get<{
      data: { groups: Array<{ rules: Array<{ name: string; health: string }> }> };
    }>('/api/v1/rules');
    const health = loaded.data.groups.flatMap((g) => g.rules.map((r) => ({ name: r.name, health: r.health })));
    expect(health.map((r) => r.name).sort()).toEqual(
      rules()
        .map((r) => (r.alert ?? r.record) as string)
        .sort(),
    );
    expect(health.filter((r) => r.health === 'err')).toEqual([]);
    // HcpProviderUnreachable picks up the provider HCP could not reach (pending for its 3 minutes, firing
    // after them on a slow run); no other alert fires.
    const unreachable = await untilAllAnswer(
      [`ALERTS{alertname="HcpProviderUnreachable", provider="${unreachableProvider}"}`],
      returnsSeries,
    );
    expect(unreachable).toEqual([]);
    const firing = await prometheus.query('ALERTS{alertstate="firing", alertname!="HcpProviderUnreachable"}');
    expect(firing.status).toBe('success');
    expect(firing.data?.result.map((r) => r.metric.alertname)).toEqual([]);
    const seeded = await prometheus.query(`ALERTS{provider="${seededProvider}"}`);
    expect(seeded.data?.result).toEqual([]);
  });

  it('drops a provider ops removed from hcp_provider_up at the next check', async () => {
    expect(await untilAllAnswer([`hcp_provider_up{provider="${unreachableProvider}"} == 0`], returnsSeries)).toEqual(
      [],
    );
    const removed = await ops.delete(`/v1/ops/providers/${unreachableProvider}`);
    expect([200, 204]).toContain(removed.status);
    const wrong = await untilAllAnswer(
      [
        `absent(hcp_provider_up{provider="${unreachableProvider}"})`,
        `max by (provider) (hcp_provider_up{provider="${seededProvider}"}) == 1`,
      ],
      returnsSeries,
    );
    expect(wrong).toEqual([]);
  });

  it('serves hcp_job_queue_jobs only from processes that run the worker, as HcpNoWorkerReporting expects', async () => {
    const apiOnly = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_ROLES: 'api' } });
    try {
      const text = await (await fetch(`${apiOnly.baseUrl}/metrics`)).text();
      expect(text).toContain('hcp_http_request_duration_seconds');
      expect(text).not.toMatch(/^hcp_job_queue_jobs\{/m);
    } finally {
      await apiOnly.stop();
      apiOnly.removeDataDir();
    }
    // The worker of the HCP under test does serve it.
    const text = await (await fetch(`${hcp.baseUrl}/metrics`)).text();
    expect(text).toMatch(/^hcp_job_queue_jobs\{state="due"\} \d+$/m);
  }, 120_000);
});
