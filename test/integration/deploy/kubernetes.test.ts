import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { MIGRATE_EXIT } from '../../../src/cli/migrate-command';
import { CONFIG_VARIABLES, loadConfig } from '../../../src/config/hcp-config';
import { apiNodeFlags } from '../../../src/launcher/child-specs';
import {
  DOCKERFILE,
  healthPaths,
  imageCommand,
  imageUser,
  KubernetesSchemas,
  kubernetesManifests,
  Manifest,
  ROOT,
} from './deploy-files';

/**
 * deploy/kubernetes/ against the Kubernetes 1.34 schemas vendored in deploy/schemas/ (strict: unknown
 * fields are refused), and against what HCP itself expects: its roles, routes, settings and migrations.
 */

const ROLES = ['api', 'worker', 'projections'] as const;
type Role = (typeof ROLES)[number];

const schemas = new KubernetesSchemas();
const manifests = kubernetesManifests();
const ofKind = (kind: string): Manifest[] =>
  manifests.filter((m) => m.manifest.kind === kind).map((m) => structuredClone(m.manifest));
const one = (kind: string, name: string): Manifest => {
  const found = ofKind(kind).filter((m) => m.metadata.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0]!;
};
const deployment = (role: Role) => one('Deployment', `hcp-${role}`);
const podSpec = (workload: Manifest) => workload.spec.template.spec;
const hcpContainer = (role: Role) => podSpec(deployment(role)).containers.find((c: any) => c.name === 'hcp');
const configMap = () => one('ConfigMap', 'hcp-config');
const exampleSecret = () => one('Secret', 'hcp-secrets');

/** A container's environment as the kubelet would build it from the ConfigMap and the example Secret. */
function environment(container: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    expect(from.configMapRef?.name).toBe('hcp-config');
    Object.assign(env, configMap().data);
  }
  const secret = exampleSecret().stringData as Record<string, string>;
  for (const variable of container.env ?? []) {
    if ('value' in variable) env[variable.name] = variable.value;
    else {
      const ref = variable.valueFrom.secretKeyRef;
      expect(ref.name).toBe('hcp-secrets');
      if (ref.key in secret) env[variable.name] = secret[ref.key]!;
      else expect(ref.optional).toBe(true);
    }
  }
  return env;
}

/** Where the example Secret has placeholders HCP would refuse at start, values that load. */
const loadable = (env: Record<string, string>) => ({
  ...env,
  HCP_SECRETS_KEKS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
});

function quantity(value: string | number): number {
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi)?$/.exec(String(value));
  if (!match) throw new Error(`quantity ${value} not understood`);
  const scale = { m: 1e-3, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[match[2] ?? ''] ?? 1;
  return Number(match[1]) * scale;
}

describe('deploy/kubernetes/', () => {
  it('every Kubernetes manifest conforms to its schema (Kubernetes 1.34, strict)', () => {
    const problems = Object.fromEntries(
      manifests.map(({ file, manifest }) => [
        `${file}: ${manifest.kind} ${manifest.metadata?.name}`,
        schemas.validate(manifest),
      ]),
    );
    expect(Object.values(problems).every((p) => p.length === 0) ? {} : problems).toEqual({});
    expect(new Set(manifests.map((m) => m.manifest.kind))).toEqual(
      new Set(['ConfigMap', 'Secret', 'Deployment', 'Service', 'PodDisruptionBudget', 'Job']),
    );
  });

  it('a Deployment with a misspelled field, a wrong type or a missing selector is refused', () => {
    const misspelled = deployment('api');
    const container = podSpec(misspelled).containers[0];
    container.livenesProbe = container.livenessProbe;
    delete container.livenessProbe;
    expect(schemas.validate(misspelled)).toEqual([
      expect.stringContaining(
        '/spec/template/spec/containers/0 must NOT have additional properties {"additionalProperty":"livenesProbe"}',
      ),
    ]);

    const wrongType = deployment('worker');
    wrongType.spec.replicas = 'two';
    podSpec(wrongType).containers[0].ports[0].containerPort = '8080';
    expect(schemas.validate(wrongType)).toEqual([
      expect.stringContaining('/spec/replicas must be integer,null'),
      expect.stringContaining('/spec/template/spec/containers/0/ports/0/containerPort must be integer'),
    ]);

    const noSelector = deployment('projections');
    delete noSelector.spec.selector;
    expect(schemas.validate(noSelector)).toEqual([expect.stringContaining(`must have required property 'selector'`)]);

    expect(() => schemas.validate({ ...deployment('api'), apiVersion: 'extensions/v1beta1' })).toThrow(/ENOENT/);
  });

  it('API, worker and projections run as separate deployments with probes and resources', () => {
    expect(
      ofKind('Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['hcp-api', 'hcp-projections', 'hcp-worker']);
    const { live, ready } = healthPaths();
    const port = loadConfig(environment(hcpContainer('api'))).port;
    for (const role of ROLES) {
      const workload = deployment(role);
      const container = hcpContainer(role);
      expect(loadConfig(loadable(environment(container))).roles).toEqual([role]);
      expect(workload.spec.replicas).toBeGreaterThanOrEqual(2);
      // Its selector picks its own pods and no other role's.
      for (const other of ROLES) {
        const labels = deployment(other).spec.template.metadata.labels;
        const selected = Object.entries(workload.spec.selector.matchLabels).every(([k, v]) => labels[k] === v);
        expect([other, selected]).toEqual([other, other === role]);
      }
      expect(container.ports).toEqual([{ name: 'http', containerPort: port, protocol: 'TCP' }]);
      expect(container.livenessProbe.httpGet).toEqual({ path: live, port: 'http' });
      expect(container.readinessProbe.httpGet).toEqual({ path: ready, port: 'http' });
      expect(container.startupProbe.httpGet).toEqual({ path: live, port: 'http' });
      for (const resource of ['cpu', 'memory']) {
        const request = quantity(container.resources.requests[resource]);
        const limit = quantity(container.resources.limits[resource]);
        expect(request).toBeGreaterThan(0);
        expect(limit).toBeGreaterThanOrEqual(request);
      }
      // A graceful stop ends within HCP_SHUTDOWN_GRACE_MS, before Kubernetes kills the pod.
      const graceMs = loadConfig(loadable(environment(container))).shutdown.graceMs;
      expect(podSpec(workload).terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs);
    }
    expect(quantity(hcpContainer('api').resources.limits.memory)).toBeGreaterThanOrEqual(332 * 2 ** 20);
  });

  it('the API pods run the image command with the V8 flags npm start gives its API processes', () => {
    const command = imageCommand(readFileSync(DOCKERFILE, 'utf8'));
    const api = hcpContainer('api');
    expect(api.command).toBeUndefined();
    expect(api.args).toEqual([
      command[0],
      ...apiNodeFlags(loadConfig(loadable(environment(api)))),
      ...command.slice(1),
    ]);
  });

  it('every pod runs as the image user, not root, without privileges, on a read-only root file system', () => {
    const uid = Number(imageUser(readFileSync(DOCKERFILE, 'utf8')).split(':')[0]);
    const dataDir = /HCP_DATA_DIR=(\S+)/.exec(readFileSync(DOCKERFILE, 'utf8'))![1];
    for (const workload of [...ofKind('Deployment'), one('Job', 'hcp-migrate')]) {
      const spec = podSpec(workload);
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: uid });
      expect(spec.automountServiceAccountToken).toBe(false);
      for (const container of [...(spec.initContainers ?? []), ...spec.containers])
        expect(container.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
    }
    for (const role of ROLES)
      expect(hcpContainer(role).volumeMounts).toEqual(expect.arrayContaining([{ name: 'data', mountPath: dataDir }]));
  });

  it('every role gets the same configuration, every setting is one HCP reads, and HCP accepts it', () => {
    const known = new Set(CONFIG_VARIABLES.map((v) => v.name));
    expect(Object.keys(configMap().data).filter((name) => !known.has(name))).toEqual([]);
    const shared = (role: Role) => {
      const { env, envFrom } = hcpContainer(role);
      const own = role === 'api' ? ['HCP_ROLES', 'HCP_SHUTDOWN_DRAIN_DELAY_MS'] : ['HCP_ROLES'];
      expect(env.filter((v: any) => !known.has(v.name))).toEqual([]);
      return { envFrom, env: env.filter((v: any) => !own.includes(v.name)) };
    };
    expect(shared('worker')).toEqual(shared('api'));
    expect(shared('projections')).toEqual(shared('api'));
    const config = loadConfig(loadable(environment(hcpContainer('api'))));
    expect(config).toMatchObject({
      databaseUrl: exampleSecret().stringData.DATABASE_URL,
      eventStoreConnectionString: exampleSecret().stringData.EVENTSTORE_CONNECTION_STRING,
      auth: { mode: 'jwks' },
      seedCatalog: false,
    });
    expect(config.messaging.brokers.length).toBeGreaterThanOrEqual(3);
  });

  it('the database URL, event store connection and keys come from the Secret, the Kafka brokers from the ConfigMap', () => {
    const sensitive = /^(DATABASE_URL|EVENTSTORE_CONNECTION_STRING)$|PASSWORD|KEK|TOKEN|SECRET/;
    expect(Object.keys(configMap().data).filter((k) => sensitive.test(k))).toEqual([]);
    expect(configMap().data.KAFKA_BROKERS).toMatch(/^[\w.-]+:\d+(,[\w.-]+:\d+)+$/);
    expect(exampleSecret().data).toBeUndefined();
    for (const role of ROLES) {
      const env = hcpContainer(role).env as any[];
      expect(env.filter((v) => sensitive.test(v.name) && 'value' in v)).toEqual([]);
      for (const name of ['DATABASE_URL', 'EVENTSTORE_CONNECTION_STRING', 'HCP_SECRETS_KEKS'])
        expect(env.find((v) => v.name === name)?.valueFrom).toEqual({
          secretKeyRef: { name: 'hcp-secrets', key: name },
        });
    }
  });

  it('the migration job runs the migrations with the roles image before the roles start', () => {
    const job = one('Job', 'hcp-migrate');
    const [migrate] = podSpec(job).containers;
    expect(podSpec(job).restartPolicy).toMatch(/^(OnFailure|Never)$/);
    expect(migrate.command).toEqual(['node', 'dist/src/cli/admin.js', 'migrate', 'up']);
    expect(existsSync(path.join(ROOT, 'src', 'cli', 'admin.ts'))).toBe(true);
    expect(loadConfig(environment(migrate)).databaseUrl).toBe(exampleSecret().stringData.DATABASE_URL);
    for (const role of ROLES) {
      const [wait, ...others] = podSpec(deployment(role)).initContainers;
      expect(others).toEqual([]);
      expect(wait.image).toBe(migrate.image);
      expect(hcpContainer(role).image).toBe(migrate.image);
      expect(wait.args.join(' ')).toContain('node dist/src/cli/admin.js migrate status');
      expect(loadConfig(environment(wait)).databaseUrl).toBe(exampleSecret().stringData.DATABASE_URL);
    }
  });

  describe('the roles wait-for-schema step, run with stand-ins for `node` and `sleep`', () => {
    const { initContainers } = podSpec(deployment('api'));
    const [wait] = initContainers;
    const run = (statusCodes: number[]) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'hcp-wait-for-schema-'));
      try {
        writeFileSync(path.join(dir, 'codes'), statusCodes.join(' '));
        // `node` answers the next exit code of the list and records how it was called.
        writeFileSync(
          path.join(dir, 'node'),
          '#!/bin/sh\necho "$*" >> "$STUB_DIR/calls"\nset -- $(cat "$STUB_DIR/codes")\ncode=$1\nshift\necho "$*" > "$STUB_DIR/codes"\nexit "$code"\n',
        );
        writeFileSync(path.join(dir, 'sleep'), '#!/bin/sh\necho "sleep $*" >> "$STUB_DIR/calls"\n');
        chmodSync(path.join(dir, 'node'), 0o755);
        chmodSync(path.join(dir, 'sleep'), 0o755);
        const [shell, ...flags] = wait.command as string[];
        const result = spawnSync(shell!, [...flags, ...wait.args], {
          env: { PATH: `${dir}:/usr/bin:/bin`, STUB_DIR: dir },
          encoding: 'utf8',
          timeout: 10_000,
        });
        return { code: result.status, calls: readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n') };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    const status = 'dist/src/cli/admin.js migrate status';

    it('waits while the schema is behind, and lets the role start once it is in step', () => {
      expect(run([MIGRATE_EXIT.behind, MIGRATE_EXIT.behind, MIGRATE_EXIT.ok])).toEqual({
        code: 0,
        calls: [status, 'sleep 5', status, 'sleep 5', status],
      });
    });

    it('stops the pod with the status code when the check fails or the schema is ahead of the release', () => {
      expect(run([MIGRATE_EXIT.behind, MIGRATE_EXIT.failed])).toEqual({
        code: MIGRATE_EXIT.failed,
        calls: [status, 'sleep 5', status],
      });
      expect(run([MIGRATE_EXIT.ahead])).toEqual({ code: MIGRATE_EXIT.ahead, calls: [status] });
    });
  });

  it('the API has a Service and a PodDisruptionBudget that select its pods, and only its pods', () => {
    const api = deployment('api');
    const labelsOf = (role: Role) => deployment(role).spec.template.metadata.labels as Record<string, string>;
    const selects = (selector: Record<string, string>, role: Role) =>
      Object.entries(selector).every(([k, v]) => labelsOf(role)[k] === v);
    const service = one('Service', 'hcp-api');
    const budget = one('PodDisruptionBudget', 'hcp-api');
    for (const selector of [service.spec.selector, budget.spec.selector.matchLabels])
      expect(ROLES.filter((role) => selects(selector, role))).toEqual(['api']);
    expect(service.spec.ports.map((p: any) => p.targetPort)).toEqual(['http']);
    // Drains go on one pod at a time, and never take the last ones.
    expect(budget.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
    expect(budget.spec.maxUnavailable).toBeLessThan(api.spec.replicas);
    expect(ofKind('Service').map((s) => s.metadata.name)).toEqual(['hcp-api']);
  });
});
