import type { OpenAPIObject } from '@nestjs/swagger';
import {
  errorTaxonomyOf,
  readApiMd,
  resourceFieldsOf,
  routeName,
  routesInApiMd,
  routesInText,
  shapeOf,
  normalisePath,
} from '../contract/api-md';
import { API_ROUTES, ContractRoute, contractErrors, EXTENSION_ROUTES } from '../contract/api-routes';
import { buildServedOpenApiDocument } from '../support/openapi-document';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const apiMd = readApiMd();
const key = (r: { method: string; path: string }) => `${r.method.toUpperCase()} ${shapeOf(r.path)}`;

describe('API.md, read as a list of routes', () => {
  it('reads method lists, a bare path after a route, and item methods on a collection', () => {
    const cell =
      '`POST/GET /v1/ops/zones`, `PUT/DELETE /v1/ops/zones/{id}` and `POST/PATCH/DELETE /v1/ops/images`, `/v1/ops/flavors`';
    expect(routesInText(cell).map(routeName)).toEqual([
      'POST /v1/ops/zones',
      'GET /v1/ops/zones',
      'PUT /v1/ops/zones/{id}',
      'DELETE /v1/ops/zones/{id}',
      'POST /v1/ops/images',
      'PATCH /v1/ops/images/{id}',
      'DELETE /v1/ops/images/{id}',
      'POST /v1/ops/flavors',
      'PATCH /v1/ops/flavors/{id}',
      'DELETE /v1/ops/flavors/{id}',
    ]);
  });

  it('takes no route from a path in prose, and drops query strings', () => {
    const cell =
      '`POST /v1/ops/vms/{id}/reconcile` (202): `{resource_id, job_id}`, `Location` at the job (`/v1/projects/{p}/jobs/{job_id}`), see `GET /v1/ops/jobs?resource_id={id}`';
    expect(routesInText(cell).map(routeName)).toEqual(['POST /v1/ops/vms/{id}/reconcile', 'GET /v1/ops/jobs']);
    expect(normalisePath('/v1/projects/{p}/vms?x=1')).toBe('/v1/projects/{project_id}/vms');
  });

  it('reads the error taxonomy with one status per code', () => {
    const taxonomy = errorTaxonomyOf(apiMd);
    expect(taxonomy.get('QUOTA_EXCEEDED')).toBe(403);
    expect(taxonomy.get('UNSUPPORTED_MEDIA_TYPE')).toBe(415);
    expect(taxonomy.size).toBe(12);
  });

  it('names in its tables exactly the routes transcribed in api-routes.ts', () => {
    const mentioned = routesInApiMd(apiMd);
    const transcribed = new Set(API_ROUTES.map(key));
    expect(mentioned.filter((r) => !transcribed.has(key(r))).map(routeName)).toEqual([]);
    const inApiMd = new Set(mentioned.map(key));
    expect(API_ROUTES.filter((r) => !inApiMd.has(key(r))).map(routeName)).toEqual([]);
    expect(API_ROUTES.length).toBe(new Set(API_ROUTES.map(key)).size);
  });

  it("gives the transcription the statuses of the tenant table's answer column", () => {
    const transcribed = new Map(API_ROUTES.map((r) => [key(r), r]));
    const given = routesInApiMd(apiMd).filter((r) => r.status !== undefined);
    expect(given.length).toBeGreaterThanOrEqual(7);
    expect(given.filter((r) => transcribed.get(key(r))?.success !== r.status).map(routeName)).toEqual([]);
  });

  it("reads a resource's fields from its section", () => {
    expect(resourceFieldsOf(apiMd, 'VM')).toEqual(expect.arrayContaining(['id', 'addresses', 'tags', 'last_job_id']));
    expect(resourceFieldsOf(apiMd, 'Job')).toEqual(expect.arrayContaining(['type', 'status', 'trace_id', 'deadline']));
    expect(resourceFieldsOf(apiMd, 'Console session')).toEqual(['session_id', 'type', 'url', 'token', 'expires_at']);
  });

  it('lists as extensions only routes API.md does not name', () => {
    const inApiMd = new Set(routesInApiMd(apiMd).map(key));
    expect(EXTENSION_ROUTES.filter((r) => inApiMd.has(key(r))).map(routeName)).toEqual([]);
  });
});

type Response = {
  description?: string;
  content?: Record<string, { schema?: unknown; examples?: Record<string, { value: unknown }> }>;
};
type Parameter = { name: string; in: string; required?: boolean; schema?: Record<string, unknown> };
type Operation = { security?: unknown[]; parameters?: Parameter[]; responses: Record<string, Response> };

describe('/openapi.json is the contract of API.md', () => {
  let db: TestDatabase;
  let doc: OpenAPIObject;
  const taxonomy = errorTaxonomyOf(apiMd);
  const schemas = () => (doc.components?.schemas ?? {}) as Record<string, any>;

  beforeAll(async () => {
    db = await createTestDatabase('hcp_openapi');
    doc = await buildServedOpenApiDocument(db.url);
  });

  afterAll(async () => {
    await db?.drop();
  });

  /** Every operation of the document as `METHOD path` with its operation. */
  const operations = (): Array<{ method: string; path: string; operation: Operation }> =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as Record<string, Operation>)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
    );
  const operationOf = (route: ContractRoute): Operation | undefined =>
    operations().find((o) => key(o) === key(route))?.operation;

  it('every API.md route is in /openapi.json with its method', () => {
    const documented = new Set(operations().map(key));
    expect(API_ROUTES.filter((r) => !documented.has(key(r))).map(routeName)).toEqual([]);
  });

  it('no route in /openapi.json is missing from API.md', () => {
    const known = new Set([...API_ROUTES, ...EXTENSION_ROUTES].map(key));
    expect(
      operations()
        .filter((o) => !known.has(key(o)))
        .map(routeName),
    ).toEqual([]);
    // The internal router (host agents) is no part of the public document.
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/internal/'))).toEqual([]);
    // And no extension is listed that HCP does not serve.
    const documented = new Set(operations().map(key));
    expect(EXTENSION_ROUTES.filter((r) => !documented.has(key(r))).map(routeName)).toEqual([]);
  });

  it("each route documents API.md's success status", () => {
    const wrong: string[] = [];
    for (const route of API_ROUTES) {
      const operation = operationOf(route);
      if (!operation) continue; // reported by the first test
      const successes = Object.keys(operation.responses).filter((s) => /^2\d\d$/.test(s));
      const expected = route.success === null ? successes.slice(0, 1) : [String(route.success)];
      if (successes.length !== 1 || successes[0] !== expected[0])
        wrong.push(
          `${routeName(route)}: documents ${successes.join(', ') || 'no 2xx'}, API.md ${route.success ?? 'one 2xx'}`,
        );
      for (const status of route.otherStatuses ?? [])
        if (!operation.responses[String(status)]) wrong.push(`${routeName(route)}: no ${status}`);
    }
    expect(wrong).toEqual([]);
  });

  it('each route documents the error envelope for its error statuses', () => {
    const envelope = schemas().ErrorEnvelope;
    expect(envelope).toMatchObject({ type: 'object', required: ['error'] });
    expect(envelope.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'trace_id']));
    expect(Object.keys(envelope.properties.error.properties).sort()).toEqual([
      'code',
      'details',
      'message',
      'trace_id',
    ]);
    expect(envelope.properties.error.properties.details.type).toBe('object');

    const missing: string[] = [];
    for (const route of API_ROUTES) {
      const operation = operationOf(route);
      if (!operation) continue;
      for (const code of contractErrors(route)) {
        const status = String(taxonomy.get(code));
        const json = operation.responses[status]?.content?.['application/json'];
        if (!json) missing.push(`${routeName(route)}: no ${status} (${code})`);
        else if ((json.schema as { $ref?: string })?.$ref !== '#/components/schemas/ErrorEnvelope')
          missing.push(`${routeName(route)}: ${status} is not the error envelope`);
        else if (!json.examples?.[code]) missing.push(`${routeName(route)}: ${status} does not name ${code}`);
      }
    }
    expect(missing).toEqual([]);

    // Every error answer of the document is the envelope, but the ones API.md gives their own body.
    const own = new Set(API_ROUTES.flatMap((r) => (r.otherStatuses ?? []).map((s) => `${key(r)} ${s}`)));
    const notEnvelope = operations().flatMap((o) =>
      Object.entries(o.operation.responses)
        .filter(([status]) => /^[45]\d\d$/.test(status) && !own.has(`${key(o)} ${status}`))
        .filter(
          ([, r]) =>
            (r.content?.['application/json']?.schema as { $ref?: string })?.$ref !==
            '#/components/schemas/ErrorEnvelope',
        )
        .map(([status]) => `${routeName(o)} ${status}`),
    );
    expect(notEnvelope).toEqual([]);
  });

  it("error codes in the document are API.md's taxonomy", () => {
    expect(schemas().ErrorEnvelope.properties.error.properties.code).toEqual({
      $ref: '#/components/schemas/ErrorCode',
    });
    expect([...schemas().ErrorCode.enum].sort()).toEqual([...taxonomy.keys()].sort());
    // Each code named on an error answer belongs to the taxonomy, under the status the taxonomy gives it.
    const misplaced = operations().flatMap((o) =>
      Object.entries(o.operation.responses).flatMap(([status, r]) =>
        Object.entries(r.content?.['application/json']?.examples ?? {})
          .filter(([, example]) => (example.value as { error?: unknown })?.error !== undefined)
          .map(([name, example]) => [name, (example.value as { error: { code: string } }).error.code] as const)
          .filter(([name, code]) => name !== code || String(taxonomy.get(code)) !== status)
          .map(([, code]) => `${routeName(o)} ${status}: ${code}`),
      ),
    );
    expect(misplaced).toEqual([]);
  });

  it('answers a started job with { resource_id, job_id } and its Location', () => {
    const wrong = API_ROUTES.filter((r) => r.startsJob).flatMap((route) => {
      const accepted = operationOf(route)?.responses['202'] as (Response & { headers?: object }) | undefined;
      const schema = accepted?.content?.['application/json']?.schema as { $ref?: string } | undefined;
      return schema?.$ref === '#/components/schemas/JobAccepted' && accepted?.headers && 'Location' in accepted.headers
        ? []
        : [routeName(route)];
    });
    expect(wrong).toEqual([]);
    expect(schemas().JobAccepted.required).toEqual(['resource_id', 'job_id']);
  });

  it("documents each list's query parameters: API.md's paging and filters", () => {
    const missing = API_ROUTES.filter((r) => r.query).flatMap((route) => {
      const parameters = (operationOf(route)?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      return route.query!.filter((name) => !parameters.includes(name)).map((name) => `${routeName(route)} ?${name}`);
    });
    expect(missing).toEqual([]);
    const vms = API_ROUTES.find((r) => r.method === 'GET' && r.path === '/v1/projects/{project_id}/vms')!;
    const limit = operationOf(vms)?.parameters?.find((p) => p.name === 'limit');
    expect(limit).toMatchObject({ required: false, schema: { minimum: 1, maximum: 200 } });
  });

  it('documents the Idempotency-Key header on every job-starting route', () => {
    const without = API_ROUTES.filter((r) => r.startsJob)
      .filter(
        (route) =>
          !(operationOf(route)?.parameters ?? []).some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
      )
      .map(routeName);
    expect(without).toEqual([]);
  });

  it('documents which routes need a token, as API.md says: all but /health/*, /metrics and the webconsole page', () => {
    expect(doc.security).toEqual([{ bearer: [] }]);
    const tokenless = operations()
      .filter((o) => o.operation.security?.length === 0)
      .map(routeName)
      .sort();
    expect(tokenless).toEqual(['GET /console/{session_id}', 'GET /health/live', 'GET /health/ready', 'GET /metrics']);
    expect(API_ROUTES.filter((r) => r.public).every((r) => tokenless.includes(routeName(r)))).toBe(true);
  });

  it('documents X-Request-Id on every answer, and Retry-After on rate limits and outages', () => {
    const missing = operations().flatMap((o) =>
      Object.entries(o.operation.responses).flatMap(([status, r]) => {
        const headers = Object.keys((r as { headers?: object }).headers ?? {});
        const retryable = ['429', '503'].includes(status) && !routeName(o).startsWith('GET /health/');
        return [
          ...(headers.includes('X-Request-Id') ? [] : [`${routeName(o)} ${status}: X-Request-Id`]),
          ...(retryable && !headers.includes('Retry-After') ? [`${routeName(o)} ${status}: Retry-After`] : []),
        ];
      }),
    );
    expect(missing).toEqual([]);
  });

  it('describes every success answer with a body by a schema', () => {
    const bare = operations().flatMap((o) =>
      Object.entries(o.operation.responses)
        .filter(([status]) => /^2\d\d$/.test(status) && status !== '204')
        .filter(([, r]) => !Object.values(r.content ?? {}).some((c) => c.schema))
        .map(([status]) => `${routeName(o)} ${status}`),
    );
    expect(bare).toEqual([]);
  });

  it("describes API.md's VM, job and console session with their fields, answered where API.md says", () => {
    const fields = (name: string) => Object.keys(schemas()[name]?.properties ?? {});
    expect(fields('Vm')).toEqual(expect.arrayContaining(resourceFieldsOf(apiMd, 'VM')));
    expect(fields('Job')).toEqual(expect.arrayContaining(resourceFieldsOf(apiMd, 'Job')));
    expect(fields('ConsoleSession')).toEqual(expect.arrayContaining(resourceFieldsOf(apiMd, 'Console session')));
    const answer = (method: string, path: string) =>
      (operationOf({ method, path } as ContractRoute)?.responses[method === 'POST' ? '201' : '200']?.content?.[
        'application/json'
      ]?.schema ?? {}) as { $ref?: string };
    expect(answer('GET', '/v1/projects/{project_id}/vms/{id}').$ref).toBe('#/components/schemas/Vm');
    expect(answer('GET', '/v1/projects/{project_id}/jobs/{job_id}').$ref).toBe('#/components/schemas/Job');
    expect(answer('POST', '/v1/projects/{project_id}/vms/{id}/console').$ref).toBe(
      '#/components/schemas/ConsoleSession',
    );
    // Lists answer { items, next_cursor }.
    expect(schemas().VmPage.properties.items.items).toEqual({ $ref: '#/components/schemas/Vm' });
    expect(schemas().VmPage.required).toEqual(['items', 'next_cursor']);
    expect(answer('GET', '/v1/projects/{project_id}/vms').$ref).toBe('#/components/schemas/VmPage');
  });

  it('resolves every schema reference', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"#\/components\/schemas\/([A-Za-z0-9_]+)"/g)].map((m) => m[1]!);
    expect([...new Set(refs)].filter((name) => !(name in schemas()))).toEqual([]);
  });
});
