import 'reflect-metadata';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PATH_METADATA } from '@nestjs/common/constants';
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import draft7MetaSchema from 'ajv/dist/refs/json-schema-draft-07.json';
import addFormats from 'ajv-formats';
import { DockerfileParser, Healthcheck } from 'dockerfile-ast';
import { parseAllDocuments } from 'yaml';
import { HealthController } from '../../../src/platform/health/health.controller';

/** What the deployment tests read: the files under docker/ and deploy/, and the schemas vendored there. */

export const ROOT = path.join(__dirname, '..', '..', '..');
export const DOCKERFILE = path.join(ROOT, 'docker', 'Dockerfile');
export const COMPOSE_FILE = path.join(ROOT, 'docker', 'compose.yaml');
export const KUBERNETES_DIR = path.join(ROOT, 'deploy', 'kubernetes');
const COMPOSE_SCHEMA = path.join(ROOT, 'docker', 'schemas', 'compose-spec.json');
export const KUBERNETES_SCHEMA_DIR = path.join(ROOT, 'deploy', 'schemas', 'kubernetes-v1.34.0-strict');

export type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; [key: string]: any };
export type Problem = string;

/** HCP's health routes as its controller declares them, so a renamed route fails these tests. */
export function healthPaths(): { live: string; ready: string } {
  const base = Reflect.getMetadata(PATH_METADATA, HealthController) as string;
  const route = (handler: (...args: any[]) => unknown) =>
    `/${base}/${Reflect.getMetadata(PATH_METADATA, handler) as string}`.replace(/\/+/g, '/');
  return { live: route(HealthController.prototype.live), ready: route(HealthController.prototype.ready) };
}

/** Every YAML document of a file, parsed strictly (a syntax error or a duplicate key throws). */
export function readYamlDocuments(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((doc) => {
    if (doc.errors.length) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS();
  });
}

/** Every manifest under deploy/kubernetes/ (examples included), with the file it came from. */
export function kubernetesManifests(): Array<{ file: string; manifest: Manifest }> {
  const files = readdirSync(KUBERNETES_DIR, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  return files.flatMap((f) =>
    readYamlDocuments(path.join(KUBERNETES_DIR, f))
      .filter((doc) => doc !== null)
      .map((manifest) => ({ file: f, manifest: manifest as Manifest })),
  );
}

export const describeErrors = (errors: ErrorObject[] | null | undefined): string =>
  (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`).join('\n');

/** The Compose Specification's schema (draft-07, named by its https address, which Ajv knows by http). */
export function composeValidator(): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  ajv.addMetaSchema({ ...draft7MetaSchema, $id: 'https://json-schema.org/draft-07/schema' });
  return ajv.compile(JSON.parse(readFileSync(COMPOSE_SCHEMA, 'utf8')));
}

/**
 * Validators of Kubernetes objects from the vendored strict schemas (additionalProperties: false, so a
 * misspelled field is refused like a wrong type). One schema file per kind and API version, named as
 * kubernetes-validate names them: `deployment-apps-v1.json`, `service-v1.json`.
 */
export class KubernetesSchemas {
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(private readonly dir = KUBERNETES_SCHEMA_DIR) {
    this.ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
    addFormats(this.ajv);
    const definitions = JSON.parse(readFileSync(path.join(dir, '_definitions.json'), 'utf8'));
    // Kubernetes' own annotations in the OpenAPI schemas (list types, patch strategies): no assertion.
    const annotations = new Set<string>();
    JSON.stringify(definitions, (key, value) => {
      if (key.startsWith('x-kubernetes-')) annotations.add(key);
      return value;
    });
    this.ajv.addVocabulary([...annotations]);
    this.ajv.addSchema(definitions);
  }

  schemaFile(apiVersion: string, kind: string): string {
    // rbac.authorization.k8s.io/v1 -> rbac-v1; apps/v1 -> apps-v1; v1 -> v1
    const version = apiVersion.replace(/^([^./]*)(?:\.[^/]*)?\//, '$1-');
    return `${kind.toLowerCase()}-${version}.json`;
  }

  /** The problems the schema finds in `manifest`; throws when no schema of its kind is vendored. */
  validate(manifest: Manifest): Problem[] {
    const file = this.schemaFile(manifest.apiVersion, manifest.kind);
    let validate = this.validators.get(file);
    if (!validate) {
      const schema = JSON.parse(readFileSync(path.join(this.dir, file), 'utf8'));
      // Its references are relative to the address _definitions.json has.
      validate = this.ajv.compile({ ...schema, $id: `https://kubernetes.io/api/${file}` });
      this.validators.set(file, validate);
    }
    return validate(manifest) ? [] : describeErrors(validate.errors).split('\n');
  }
}

/** `${NAME:-default}` and `${NAME}` in a compose value, as Compose reads it with nothing set. */
export function composeDefault(value: string): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_, _name, fallback) => fallback ?? '');
}

/** The final stage's instructions: what the image that runs is made of. */
export function finalStage(content: string) {
  const dockerfile = DockerfileParser.parse(content);
  const froms = dockerfile.getFROMs();
  const start = froms.length ? froms[froms.length - 1]!.getRange().start.line : 0;
  return dockerfile.getInstructions().filter((i) => i.getRange().start.line >= start);
}

/** The user the image runs as: the final stage's last USER, or root when there is none. */
export function imageUser(content: string): string {
  const users = finalStage(content).filter((i) => i.getKeyword() === 'USER');
  return users.length ? (users[users.length - 1]!.getArgumentsContent() ?? '').trim() : 'root';
}

/** The command the image runs: the final stage's CMD, in exec form. */
export function imageCommand(content: string): string[] {
  const cmd = finalStage(content).find((i) => i.getKeyword() === 'CMD')!;
  return JSON.parse(cmd.getArgumentsContent()!) as string[];
}

/** What keeps the image from running as HCP's deployments expect: non-root by number, checked health. */
export function imageProblems(content: string): Problem[] {
  const problems: Problem[] = [];
  const user = imageUser(content).split(':')[0]!;
  if (!/^\d+$/.test(user)) problems.push(`USER ${user}: not a numeric user (runAsNonRoot cannot verify a name)`);
  else if (Number(user) === 0) problems.push('USER 0: the image runs as root');
  const checks = finalStage(content).filter((i): i is Healthcheck => i instanceof Healthcheck);
  const check = checks[checks.length - 1];
  if (check?.getSubcommand()?.getValue().toUpperCase() !== 'CMD') problems.push('no HEALTHCHECK CMD');
  else {
    const { live, ready } = healthPaths();
    const command = check.getArgumentsContent() ?? '';
    if (!command.includes(ready) && !command.includes(live))
      problems.push(`HEALTHCHECK asks neither ${ready} nor ${live}: ${command}`);
  }
  return problems;
}
