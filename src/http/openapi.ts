import { INestApplication, Type } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ModulesContainer } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ValidationTypes } from 'class-validator';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { INTERNAL_PATH_PREFIX, ROUTE_POLICIES, RoutePolicy, routeKey } from '@hcp/auth';
import { ERROR_CODES, ErrorCode, HTTP_STATUS_OF, JOB_TYPES } from '@hcp/domain';

/** Publishes the API as OpenAPI 3 at /openapi.json with browsable docs at /docs (no token needed). */
export function publishOpenApi(app: INestApplication): void {
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app), { jsonDocumentUrl: 'openapi.json' });
}

/**
 * The document /openapi.json serves, built from the application's controllers (no server needed): every
 * public route with its request body, its success answer and the error envelope of each error it may
 * answer, under the status API.md's taxonomy gives that code.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('HCP, the Hypervisor Control Plane')
    .setDescription(
      'One provider-agnostic compute API. Errors use the envelope { error: { code, message, details?, trace_id } }.',
    )
    .setVersion('v1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    .addSecurityRequirements('bearer')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  // The internal router (host agents, /internal/v1) is no part of the public API: its contract is
  // libs/host-protocol, shared by HCP and the agent.
  for (const path of Object.keys(document.paths))
    if (path.startsWith(INTERNAL_PATH_PREFIX)) delete document.paths[path];
  // Body and query DTOs are described once, by their class-validator rules; Swagger's references to them
  // (by class name) then resolve to the very rules the validation pipe enforces.
  const schemas = validationMetadatasToSchemas({
    refPointerPrefix: '#/components/schemas/',
    // A custom check (ssh keys, ...) has no JSON Schema form; the library's default would point at the
    // property's design type (`Array`), a schema that does not exist. The other decorators describe it.
    additionalConverters: { [ValidationTypes.CUSTOM_VALIDATION]: () => ({}) },
  });
  // Free-form objects (tags, metadata, settings) are typed `Record`, which reflects as `Object`.
  schemas.Object = { type: 'object', additionalProperties: true };
  document.components = {
    ...document.components,
    schemas: {
      ...document.components?.schemas,
      ...(schemas as Record<string, object>),
      ...SHARED_SCHEMAS,
      ...ANSWER_SCHEMAS,
    },
  };
  documentQueries(document, queryDtosOf(app));
  documentAnswers(document);
  return document;
}

/**
 * The query DTO of each handler that takes one whole (`@Query() q: ListVmsQueryDto`), by Swagger's
 * operation id (`Controller_method`). Swagger lists such a DTO's fields only from @ApiProperty, which
 * HCP's DTOs do not carry: their class-validator rules are their description.
 */
function queryDtosOf(app: INestApplication): Map<string, string> {
  const dtos = new Map<string, string>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Type | null;
      if (!controller) continue;
      for (const method of Object.getOwnPropertyNames(controller.prototype)) {
        const args: Record<string, { index: number; data?: unknown }> =
          Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, method) ?? {};
        const types: unknown[] = Reflect.getMetadata('design:paramtypes', controller.prototype, method) ?? [];
        for (const [key, arg] of Object.entries(args)) {
          if (key.split(':')[0] !== String(RouteParamtypes.QUERY) || arg.data !== undefined) continue;
          const dto = types[arg.index];
          if (typeof dto === 'function') dtos.set(`${controller.name}_${method}`, dto.name);
        }
      }
    }
  }
  return dtos;
}

type SchemaObject = { properties?: Record<string, object>; required?: string[] };

/** Each query DTO's fields as query parameters, with the rules the validation pipe enforces. */
function documentQueries(document: OpenAPIObject, dtos: Map<string, string>): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, SchemaObject>;
  for (const item of Object.values(document.paths))
    for (const operation of Object.values(item as Record<string, { operationId?: string; parameters?: object[] }>)) {
      const dto = operation.operationId ? dtos.get(operation.operationId) : undefined;
      const schema = dto ? schemas[dto] : undefined;
      if (!schema?.properties) continue;
      operation.parameters = [
        ...(operation.parameters ?? []),
        ...Object.entries(schema.properties).map(([name, property]) => ({
          name,
          in: 'query',
          required: schema.required?.includes(name) ?? false,
          schema: property,
        })),
      ];
    }
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Answers many routes share: the error envelope (API.md "Errors") and a job's acceptance. */
const SHARED_SCHEMAS: Record<string, object> = {
  ErrorCode: { type: 'string', enum: [...ERROR_CODES], description: "API.md's error taxonomy" },
  ErrorEnvelope: {
    type: 'object',
    required: ['error'],
    additionalProperties: false,
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'trace_id'],
        additionalProperties: false,
        properties: {
          code: ref('ErrorCode'),
          message: { type: 'string', description: 'for people; leaks no internals' },
          details: { type: 'object', additionalProperties: true },
          trace_id: { type: 'string', description: 'the request id, also in X-Request-Id' },
        },
      },
    },
  },
  JobAccepted: {
    type: 'object',
    required: ['resource_id', 'job_id'],
    properties: { resource_id: { type: 'string' }, job_id: { type: 'string', format: 'uuid' } },
  },
};

const str = { type: 'string' };
const nullableStr = { type: 'string', nullable: true };
const time = { type: 'string', format: 'date-time' };
const nullableTime = { type: 'string', format: 'date-time', nullable: true };
const int = { type: 'integer' };
const bool = { type: 'boolean' };
const freeObject = { type: 'object', additionalProperties: true };
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
const enumOf = (...values: string[]) => ({ type: 'string', enum: values });
const object = (properties: Record<string, object>, required = Object.keys(properties)) => ({
  type: 'object',
  required,
  properties,
});
/** API.md's list answer: `{ items: [...], next_cursor }`. */
const page = (item: string) =>
  object({ items: { type: 'array', items: ref(item) }, next_cursor: { type: 'string', nullable: true } });
/** Ops resources answer their spec with `id` and timestamps (API.md "Request bodies"; the specs in @hcp/domain). */
const opsResource = (spec: Record<string, object>) => object({ id: str, ...spec, created_at: time, updated_at: time });
const resources = object({ vcpus: int, ram_mb: int, disk_gb: int });
const quotaFigures = object({ instances: int, vcpus: int, ram_mb: int, disk_gb: int });
const jobError = {
  ...object({ code: ref('ErrorCode'), message: str, details: freeObject, retryable: bool }, [
    'code',
    'message',
    'retryable',
  ]),
  nullable: true,
};

/** What the routes answer (API.md's VM, Job, console session, lists, and the ops records). */
const ANSWER_SCHEMAS: Record<string, object> = {
  Vm: object({
    id: str,
    project_id: str,
    name: str,
    zone: str,
    image_id: str,
    flavor_id: str,
    status: enumOf(
      'provisioning',
      'starting',
      'running',
      'stopping',
      'stopped',
      'rebooting',
      'deleting',
      'deleted',
      'error',
    ),
    desired_state: enumOf('running', 'stopped', 'deleted'),
    addresses: { type: 'array', items: object({ type: enumOf('ipv4', 'ipv6'), address: str, nic: str }) },
    tags: stringMap,
    metadata: stringMap,
    created_at: time,
    updated_at: time,
    last_job_id: str,
  }),
  VmPage: page('Vm'),
  Job: object({
    id: str,
    project_id: str,
    type: enumOf(...JOB_TYPES),
    status: enumOf('queued', 'running', 'succeeded', 'failed'),
    resource_id: str,
    attempts: int,
    created_at: time,
    started_at: nullableTime,
    finished_at: nullableTime,
    error: jobError,
    trace_id: str,
    deadline: time,
  }),
  JobPage: page('Job'),
  Quota: object({ project_id: str, limits: { ...quotaFigures, nullable: true }, usage: quotaFigures }),
  ConsoleSession: object({
    session_id: str,
    type: enumOf('vnc', 'spice', 'webconsole', 'rdp'),
    url: str,
    token: str,
    expires_at: time,
  }),
  Capabilities: object({
    console_types: { type: 'array', items: enumOf('vnc', 'spice', 'webconsole', 'rdp') },
    reboot: bool,
    graceful_stop: bool,
    snapshots: bool,
    resize: bool,
    guest_agent_addresses: bool,
    provider_tags: bool,
  }),
  Zone: object({ id: str, name: str, policy: str, capabilities: ref('Capabilities') }),
  ZonePage: page('Zone'),
  Image: object({
    id: str,
    name: str,
    os: str,
    min_disk_gb: int,
    min_ram_mb: int,
    visibility: enumOf('public', 'private'),
    created_at: time,
  }),
  ImagePage: page('Image'),
  Flavor: object({ id: str, name: str, vcpus: int, ram_mb: int, disk_gb: int, extras: freeObject, created_at: time }),
  FlavorPage: page('Flavor'),
  ProviderHealth: object({
    status: enumOf('healthy', 'unreachable', 'unknown'),
    message: nullableStr,
    checked_at: nullableTime,
  }),
  Provider: object(
    {
      id: str,
      name: str,
      type: enumOf('proxmox', 'vsphere', 'libvirt', 'hyperv', 'simulator'),
      endpoint: nullableStr,
      tls: object({ ca_pem: str, fingerprint_sha256: str }, []),
      settings: freeObject,
      credentials_set: bool,
      health: ref('ProviderHealth'),
      created_at: time,
      updated_at: time,
    },
    ['id', 'name', 'type', 'endpoint', 'tls', 'settings', 'credentials_set', 'health', 'created_at', 'updated_at'],
  ),
  ProviderPage: page('Provider'),
  Cluster: opsResource({
    name: str,
    provider_id: str,
    placement_hints: freeObject,
    capacity: { ...resources, nullable: true },
    enabled: bool,
    capabilities: freeObject,
  }),
  ClusterPage: page('Cluster'),
  OpsZone: opsResource({ name: str, cluster_ids: { type: 'array', items: str }, policy: enumOf('spread', 'pack') }),
  OpsZonePage: page('OpsZone'),
  OpsImage: opsResource({
    name: str,
    os: str,
    min_disk_gb: int,
    min_ram_mb: int,
    visibility: enumOf('public', 'private'),
    provider_refs: stringMap,
  }),
  OpsImagePage: page('OpsImage'),
  OpsFlavor: opsResource({ name: str, vcpus: int, ram_mb: int, disk_gb: int, extras: freeObject }),
  OpsFlavorPage: page('OpsFlavor'),
  AuditRecord: object(
    {
      event_id: str,
      timestamp: time,
      actor: nullableStr,
      action: str,
      target: stringMap,
      project_id: nullableStr,
      result: enumOf('received', 'accepted', 'started', 'succeeded', 'failed', 'denied'),
      error_code: ref('ErrorCode'),
      trace_id: nullableStr,
      details: freeObject,
    },
    ['event_id', 'timestamp', 'actor', 'action', 'target', 'project_id', 'result', 'trace_id', 'details'],
  ),
  AuditPage: page('AuditRecord'),
  MeteringRecord: object({
    event_id: str,
    kind: str,
    project_id: str,
    vm_id: str,
    zone: str,
    flavor_id: str,
    resources,
    effective_at: time,
  }),
  MeteringPage: page('MeteringRecord'),
  Projection: object({
    name: str,
    kind: enumOf('read_model', 'process_manager'),
    position: nullableStr,
    head: str,
    lag: nullableStr,
    updated_at: nullableTime,
    rebuilding: bool,
    last_rebuild: { ...freeObject, nullable: true },
    dead_letters: int,
  }),
  ProjectionPage: page('Projection'),
  ProjectionRebuild: object({ name: str, status: enumOf('rebuilding') }),
  DeadLetter: object({
    id: str,
    projection: str,
    position: str,
    event_id: str,
    stream_id: str,
    stream_revision: str,
    event_type: str,
    error: str,
    attempts: int,
    status: enumOf('open', 'retried', 'skipped', 'resolved'),
    first_failed_at: time,
    last_failed_at: time,
    updated_at: time,
  }),
  DeadLetterPage: page('DeadLetter'),
  Orphan: object({
    id: str,
    provider_id: str,
    cluster_id: str,
    hcp_id: str,
    project_id: nullableStr,
    hcp_record: enumOf('absent', 'deleted', 'failed_create'),
    power_state: str,
    status: enumOf('open', 'destroying', 'destroy_failed', 'destroyed', 'adopted', 'cleared'),
    actions: { type: 'array', items: enumOf('adopt', 'destroy') },
    job_id: nullableStr,
    error: jobError,
    found_at: time,
    created_at: time,
    updated_at: time,
  }),
  OrphanPage: page('Orphan'),
  Enrollment: object({ id: str, cluster_id: str, token: str, expires_at: time }),
  Host: object({
    id: str,
    cluster_id: str,
    identity: str,
    hostname: str,
    state: enumOf('active', 'revoked'),
    online: bool,
    last_heartbeat_at: nullableTime,
    capacity: freeObject,
    capabilities: freeObject,
    driver: str,
    agent_version: nullableStr,
    guests: { type: 'array', items: freeObject },
    credential_source: enumOf('enrolled', 'static'),
    enrolled_at: time,
    credential_rotated_at: nullableTime,
  }),
  HostPage: page('Host'),
  HostCredential: object({ credential: str }),
  Liveness: object({ status: enumOf('ok') }),
  Readiness: object(
    {
      status: enumOf('ok', 'failing', 'draining'),
      checks: object({ database: freeObject, event_store: freeObject, schema: freeObject }, []),
    },
    ['status'],
  ),
};

/**
 * The success answer of each route, by its key in the route-policy table. A new route needs its line here
 * (and API.md or the contract's extension list): test/e2e/openapi-contract.e2e.ts fails without.
 */
const ROUTE_ANSWERS: Readonly<Record<string, string | { mediaType: string }>> = {
  'GET /health/live': 'Liveness',
  'GET /health/ready': 'Readiness',
  'GET /metrics': { mediaType: 'text/plain' },
  'GET /console/:session_id': { mediaType: 'text/html' },
  'GET /v1/zones': 'ZonePage',
  'GET /v1/images': 'ImagePage',
  'GET /v1/images/:id': 'Image',
  'GET /v1/flavors': 'FlavorPage',
  'GET /v1/flavors/:id': 'Flavor',
  'GET /v1/projects/:project_id/vms': 'VmPage',
  'GET /v1/projects/:project_id/vms/:vm_id': 'Vm',
  'PATCH /v1/projects/:project_id/vms/:vm_id': 'Vm',
  'POST /v1/projects/:project_id/vms/:vm_id/console': 'ConsoleSession',
  'GET /v1/projects/:project_id/jobs': 'JobPage',
  'GET /v1/projects/:project_id/jobs/:job_id': 'Job',
  'GET /v1/projects/:project_id/quotas': 'Quota',
  'POST /v1/ops/providers': 'Provider',
  'GET /v1/ops/providers': 'ProviderPage',
  'GET /v1/ops/providers/:id': 'Provider',
  'PATCH /v1/ops/providers/:id': 'Provider',
  'POST /v1/ops/providers/:id/check': 'ProviderHealth',
  'POST /v1/ops/clusters': 'Cluster',
  'GET /v1/ops/clusters': 'ClusterPage',
  'GET /v1/ops/clusters/:id': 'Cluster',
  'PATCH /v1/ops/clusters/:id': 'Cluster',
  'POST /v1/ops/clusters/:id/enrollments': 'Enrollment',
  'GET /v1/ops/hosts': 'HostPage',
  'GET /v1/ops/hosts/:id': 'Host',
  'POST /v1/ops/hosts/:id/revoke': 'Host',
  'POST /v1/ops/hosts/:id/rotate': 'HostCredential',
  'POST /v1/ops/zones': 'OpsZone',
  'GET /v1/ops/zones': 'OpsZonePage',
  'GET /v1/ops/zones/:id': 'OpsZone',
  'PUT /v1/ops/zones/:id': 'OpsZone',
  'POST /v1/ops/images': 'OpsImage',
  'GET /v1/ops/images': 'OpsImagePage',
  'PATCH /v1/ops/images/:id': 'OpsImage',
  'POST /v1/ops/flavors': 'OpsFlavor',
  'GET /v1/ops/flavors': 'OpsFlavorPage',
  'PATCH /v1/ops/flavors/:id': 'OpsFlavor',
  'PUT /v1/ops/projects/:project_id/quotas': 'Quota',
  'GET /v1/ops/vms': 'VmPage',
  'GET /v1/ops/jobs': 'JobPage',
  'POST /v1/ops/jobs/:id/recover': 'Job',
  'GET /v1/ops/orphans': 'OrphanPage',
  'GET /v1/ops/orphans/:id': 'Orphan',
  'POST /v1/ops/orphans/:id/adopt': 'Orphan',
  'GET /v1/ops/audit': 'AuditPage',
  'GET /v1/ops/metering': 'MeteringPage',
  'GET /v1/ops/projections': 'ProjectionPage',
  'POST /v1/ops/projections/:name/rebuild': 'ProjectionRebuild',
  'GET /v1/ops/dead-letters': 'DeadLetterPage',
  'POST /v1/ops/dead-letters/:id/retry': 'DeadLetter',
  'POST /v1/ops/dead-letters/:id/skip': 'DeadLetter',
};

/**
 * Errors a route answers beyond the ones its shape implies (see impliedErrors): what API.md says of
 * that route, and what its handler refuses with. Keys as in the route-policy table.
 */
const ROUTE_ERRORS: Readonly<Record<string, readonly ErrorCode[]>> = {
  'POST /v1/projects/:project_id/vms': ['QUOTA_EXCEEDED', 'FEATURE_NOT_SUPPORTED', 'CONFLICT'],
  'PATCH /v1/projects/:project_id/vms/:vm_id': ['CONFLICT'],
  'DELETE /v1/projects/:project_id/vms/:vm_id': ['CONFLICT'],
  'POST /v1/projects/:project_id/vms/:vm_id/actions/start': ['CONFLICT'],
  'POST /v1/projects/:project_id/vms/:vm_id/actions/stop': ['CONFLICT', 'FEATURE_NOT_SUPPORTED'],
  'POST /v1/projects/:project_id/vms/:vm_id/actions/reboot': ['CONFLICT', 'FEATURE_NOT_SUPPORTED'],
  'POST /v1/projects/:project_id/vms/:vm_id/console': ['CONFLICT', 'FEATURE_NOT_SUPPORTED'],
  'POST /v1/ops/providers': ['CONFLICT'],
  'PATCH /v1/ops/providers/:id': ['CONFLICT'],
  'DELETE /v1/ops/providers/:id': ['CONFLICT'],
  'POST /v1/ops/clusters': ['CONFLICT'],
  'PATCH /v1/ops/clusters/:id': ['CONFLICT'],
  'DELETE /v1/ops/clusters/:id': ['CONFLICT'],
  'POST /v1/ops/clusters/:id/enrollments': ['FEATURE_NOT_SUPPORTED'],
  'POST /v1/ops/hosts/:id/rotate': ['CONFLICT'],
  'POST /v1/ops/zones': ['CONFLICT'],
  'PUT /v1/ops/zones/:id': ['CONFLICT'],
  'DELETE /v1/ops/zones/:id': ['CONFLICT'],
  'POST /v1/ops/images': ['CONFLICT'],
  'PATCH /v1/ops/images/:id': ['CONFLICT'],
  'DELETE /v1/ops/images/:id': ['CONFLICT'],
  'POST /v1/ops/flavors': ['CONFLICT'],
  'PATCH /v1/ops/flavors/:id': ['CONFLICT'],
  'DELETE /v1/ops/flavors/:id': ['CONFLICT'],
  'POST /v1/ops/jobs/:id/recover': ['CONFLICT'],
  'POST /v1/ops/orphans/:id/adopt': ['CONFLICT'],
  'POST /v1/ops/orphans/:id/destroy': ['CONFLICT'],
};

/**
 * What any route of this shape may answer: every request malformed input (400) and a fault (500); every
 * one but health and metrics an outage of HCP's own dependencies or draining (503); a resource id in the
 * path or a tenant's project, an absent or invisible one (404); every token-checked one a refused token
 * (401), role (403) and rate limit (429); a body, the wrong media type (415); a job-starting one, an
 * idempotency key reused with another body (409).
 */
function impliedErrors(method: string, path: string, policy: RoutePolicy): ErrorCode[] {
  // Input no field accepts (NUL in the path or query) is refused before any route, health checks too.
  const codes: ErrorCode[] = ['INVALID_REQUEST', 'INTERNAL_ERROR'];
  // Health and metrics answer while HCP's dependencies are away or it drains; everything else may not.
  if (!OPERATIONAL.test(path)) codes.push('PROVIDER_UNAVAILABLE');
  // A resource id in the path, or a tenant's project: absent or not visible (another project's is not told apart).
  if (/:(?!project_id\b)\w+/.test(path) || policy.scope === 'project') codes.push('NOT_FOUND');
  if (policy.scope === 'public') return codes;
  codes.push('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED');
  if (['POST', 'PUT', 'PATCH'].includes(method)) codes.push('UNSUPPORTED_MEDIA_TYPE');
  if ('starts_job' in policy && policy.starts_job) codes.push('CONFLICT');
  return codes;
}

const OPERATIONAL = /^\/(health|metrics)(\/|$)/;

/** API.md: on every POST/DELETE that starts a job; the same key and body within 24 h answer the first answer again. */
const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'same key and body within 24 h: the first answer again, no second job; same key, another body: 409',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
};

/** API.md: the request's id (given as X-Request-Id or traceparent, else generated) on every response. */
const REQUEST_ID_HEADER = { description: 'the request id, also trace_id in error bodies', schema: { type: 'string' } };
/** API.md: PROVIDER_UNAVAILABLE answers are retryable and say when; rate limits say when too (not readiness's 503). */
const RETRY_AFTER_HEADER = { description: 'seconds to wait before retrying', schema: { type: 'integer' } };

type Operation = {
  security?: object[];
  parameters?: object[];
  responses: Record<
    string,
    { description?: string; content?: Record<string, object>; headers?: Record<string, object> }
  >;
};

function documentAnswers(document: OpenAPIObject): void {
  const unused = new Set([...Object.keys(ROUTE_ERRORS), ...Object.keys(ROUTE_ANSWERS)]);
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item as Record<string, Operation>)) {
      const key = routeKey(method, path.replace(/\{(\w+)\}/g, ':$1'));
      const policy = ROUTE_POLICIES[key];
      if (!policy) continue;
      unused.delete(key);
      // API.md: no token on /health/*, /metrics (and the webconsole page, opened by its session's token).
      if (policy.scope === 'public') operation.security = [];
      documentSuccess(key, policy, operation);
      if ('starts_job' in policy && policy.starts_job)
        operation.parameters = [...(operation.parameters ?? []), IDEMPOTENCY_KEY];
      const [verb, template] = key.split(' ') as [string, string];
      const codes = new Set([...impliedErrors(verb, template, policy), ...(ROUTE_ERRORS[key] ?? [])]);
      const byStatus = new Map<number, ErrorCode[]>();
      for (const code of ERROR_CODES.filter((c) => codes.has(c)))
        byStatus.set(HTTP_STATUS_OF[code], [...(byStatus.get(HTTP_STATUS_OF[code]) ?? []), code]);
      for (const [status, statusCodes] of byStatus) {
        // A route that documents its own answer for this status (readiness's 503) keeps it.
        if (operation.responses[String(status)]) continue;
        operation.responses[String(status)] = errorResponse(statusCodes);
      }
      for (const [status, response] of Object.entries(operation.responses))
        response.headers = {
          ...response.headers,
          'X-Request-Id': REQUEST_ID_HEADER,
          ...((status === '503' || status === '429') && isErrorEnvelope(response)
            ? { 'Retry-After': RETRY_AFTER_HEADER }
            : {}),
        };
    }
  }
  // A typo in a table would document nothing and go unnoticed.
  if (unused.size > 0)
    throw new Error(`openapi: answers documented for routes the API does not have: ${[...unused].join(', ')}`);
}

/** The body of the route's one success answer (its status is the controller's: @HttpCode, or Swagger's default). */
function documentSuccess(key: string, policy: RoutePolicy, operation: Operation): void {
  const status = Object.keys(operation.responses).find((s) => /^2\d\d$/.test(s));
  if (!status || status === '204') return;
  const response = operation.responses[status]!;
  if ('starts_job' in policy && policy.starts_job && status === '202') {
    operation.responses[status] = {
      description: 'accepted: the job that does it, with the address to follow in Location',
      headers: { Location: { description: 'the job (an orphan destroy: the orphan)', schema: { type: 'string' } } },
      content: { 'application/json': { schema: ref('JobAccepted') } },
    };
    return;
  }
  const answer = ROUTE_ANSWERS[key];
  if (answer === undefined) return;
  const content =
    typeof answer === 'string'
      ? { 'application/json': { schema: ref(answer) } }
      : { [answer.mediaType]: { schema: { type: 'string' } } };
  operation.responses[status] = { ...response, description: response.description || 'OK', content };
  // Readiness answers the same body with 503 when a dependency or the schema is not right, or it drains.
  if (key === 'GET /health/ready')
    operation.responses['503'] = {
      description: 'not ready: the failing check is named (database, event_store, schema), or draining',
      content: { 'application/json': { schema: ref('Readiness') } },
    };
}

const isErrorEnvelope = (response: Operation['responses'][string]) =>
  (response.content?.['application/json'] as { schema?: { $ref?: string } } | undefined)?.schema?.$ref ===
  '#/components/schemas/ErrorEnvelope';

function errorResponse(codes: ErrorCode[]): Operation['responses'][string] {
  return {
    description: codes.join(' or '),
    content: {
      'application/json': {
        schema: ref('ErrorEnvelope'),
        examples: Object.fromEntries(
          codes.map((code) => [
            code,
            { value: { error: { code, message: code.toLowerCase().replaceAll('_', ' '), trace_id: 'req-…' } } },
          ]),
        ),
      },
    },
  };
}
