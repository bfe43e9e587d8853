import { copyFileSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { describeWithPrometheus, MONITORING_DIR, promtool, scratchDir } from './prometheus-binaries';

const PROMETHEUS_DIR = path.join(MONITORING_DIR, 'prometheus');
const RULES = path.join(PROMETHEUS_DIR, 'hcp.rules.yaml');
const RULE_TESTS = path.join(PROMETHEUS_DIR, 'hcp.rules.test.yaml');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface AlertCheck {
  alertname: string;
  exp_alerts?: unknown[];
}

const rules = (): Rule[] =>
  (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
const alerts = () => rules().filter((r): r is Rule & { alert: string } => typeof r.alert === 'string');

describe('HCP alerting rules as written', () => {
  it('give every alert a severity (critical or warning), a summary and a runbook description', () => {
    expect(alerts().length).toBeGreaterThan(0);
    for (const alert of alerts()) {
      expect({ alert: alert.alert, severity: alert.labels?.severity }).toEqual({
        alert: alert.alert,
        severity: expect.stringMatching(/^(critical|warning)$/),
      });
      expect(alert.annotations?.summary?.trim()).toBeTruthy();
      expect((alert.annotations?.description ?? '').trim().length).toBeGreaterThan(40);
    }
  });

  it('have unit tests in which each alert both fires and stays quiet', () => {
    const checks = (
      parse(readFileSync(RULE_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test?: AlertCheck[] }> }
    ).tests.flatMap((t) => t.alert_rule_test ?? []);
    const missing = alerts().flatMap(({ alert }) => {
      const mine = checks.filter((c) => c.alertname === alert);
      return [
        ...(mine.some((c) => (c.exp_alerts ?? []).length > 0) ? [] : [`${alert} never fires`]),
        ...(mine.some((c) => (c.exp_alerts ?? []).length === 0) ? [] : [`${alert} is never quiet`]),
      ];
    });
    expect(missing).toEqual([]);
  });
});

describeWithPrometheus('HCP alerting rules under promtool', (bins) => {
  it('pass promtool check rules', async () => {
    const result = await promtool(bins, ['check', 'rules', RULES], PROMETHEUS_DIR);
    expect(result).toEqual({ code: 0, output: expect.stringMatching(/SUCCESS: \d+ rules found/) });
  });

  it('pass their promtool unit tests', async () => {
    const result = await promtool(bins, ['test', 'rules', RULE_TESTS], PROMETHEUS_DIR);
    expect(result).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('make promtool check rules fail when an expression does not parse', async () => {
    const scratch = scratchDir('hcp-rules-');
    try {
      const text = readFileSync(RULES, 'utf8');
      const broken = text.replace(
        'max(hcp_job_queue_oldest_due_seconds) > 300',
        'max(hcp_job_queue_oldest_due_seconds > 300',
      );
      expect(broken).not.toBe(text);
      const file = scratch.write('hcp.rules.yaml', broken);
      const result = await promtool(bins, ['check', 'rules', file], scratch.dir);
      expect(result.code).not.toBe(0);
      expect(result.output).toMatch(/parse error|unclosed|expected/i);
    } finally {
      scratch.remove();
    }
  });

  it('make the unit tests fail when a threshold moves', async () => {
    const scratch = scratchDir('hcp-rules-');
    try {
      const text = readFileSync(RULES, 'utf8');
      const moved = text.replace(
        'max(hcp_job_queue_oldest_due_seconds) > 300',
        'max(hcp_job_queue_oldest_due_seconds) > 3000',
      );
      expect(moved).not.toBe(text);
      scratch.write('hcp.rules.yaml', moved);
      copyFileSync(RULE_TESTS, path.join(scratch.dir, 'hcp.rules.test.yaml'));
      const result = await promtool(bins, ['test', 'rules', 'hcp.rules.test.yaml'], scratch.dir);
      expect(result.code).not.toBe(0);
      expect(result.output).toContain('HcpJobsWaitingForWorkers');
    } finally {
      scratch.remove();
    }
  });

  it('load from the example Prometheus configuration (promtool check config)', async () => {
    const result = await promtool(bins, ['check', 'config', 'prometheus.example.yaml'], PROMETHEUS_DIR);
    expect(result).toEqual({ code: 0, output: expect.stringContaining('is valid prometheus config file syntax') });
  });
});
