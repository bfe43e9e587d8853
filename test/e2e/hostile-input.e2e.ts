/**
 * Hostile input at every route of the route table (issue 3, item 5): random and malicious path
 * parameters, bodies, headers and query strings. Whatever comes in, HCP answers
 * - never a 5xx (nor a 1xx/3xx),
 * - with `X-Request-Id` on every answer (the caller's own when it sent a well-formed one),
 * - JSON (`content-type: application/json`) whenever there is a body,
 * - for errors: exactly `{ error: { code, message, trace_id, details? } }`, a code of API.md's table,
 *   the HTTP status that code maps to, and `trace_id` equal to `X-Request-Id`,
 * - `X-Content-Type-Options: nosniff` on every answer,
 * - no stack trace, `node_modules` path, source file position or database error text in any body,
 * - and never a 2xx to a request without a valid credential (on a non-public route).
 *
 * One property per route and family of hostility (path parameters, headers and credentials, query
 * strings, one read parameter, request bodies' fields, request bodies' shapes, everything at once), so
 * that one bug does not hide the others and every route of the table gets its share. Every property has
 * a fixed seed derived from its name: a run replays the same inputs. On a failure fast-check prints the
 * seed, the path and the shrunk counterexample, and the error names the request sent, the answer and
 * HCP's log line for that trace id. To replay one: `-t '<route> <test name>'`, and pass the printed
 * `seed` and `path` to fc.assert in `check()`.
 */
import * as fc from 'fast-check';
import { ROUTE_POLICIES, RoutePolicy } from '@hcp/auth';
import { readModelProjections, SILENT_SINKS } from '@hcp/projections';
import { QuotaReleaseProjection } from '../../src/quotas/quota-release.projection';
import { VmJobDispatcherProjection } from '../../src/vms/jobs/vm-job-dispatcher.projection';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import {
  anyBodyRequestArb,
  BodyFieldsContext,
  BodyFocus,
  BodyRequest,
  bodyRequestArb,
  breakGlassReasonArb,
  extraHeaderArb,
  fieldBodySpecArb,
  headerText,
  idempotencyKeyArb,
  PathParam,
  pathParamArb,
  PathSuffix,
  pathSuffixArb,
  QuerySpec,
  querySpecArb,
  renderBody,
  renderPathParam,
  renderPathSuffix,
  renderQuery,
  requestIdArb,
  SENDABLE_HEADER_VALUE,
  shapeBodySpecArb,
  Text,
  textOf,
  traceparentArb,
  twistedQuerySpecArb,
} from '../support/arbitraries';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/** API.md, "Errors": every code and the one HTTP status it is answered with. */
const TAXONOMY: Readonly<Record<string, number>> = {
  INVALID_REQUEST: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  QUOTA_EXCEEDED: 403,
  FEATURE_NOT_SUPPORTED: 422,
  RATE_LIMITED: 429,
  PROVIDER_UNAVAILABLE: 503,
  PROVIDER_TIMEOUT: 504,
  INTERNAL_ERROR: 500,
};

/** What must never reach a client. The hostile strings of the arbitraries contain none of these. */
const LEAKS: ReadonlyArray<[string, RegExp]> = [
  ['a node_modules path', /node_modules/i],
  ['a stack frame', /\bat (?:async )?[\w$.<>[\] ]*\(?(?:\/|file:|node:|[A-Za-z]:\\)[^)\s]*:\d+:\d+\)?/],
  ['a source position', /\.(?:ts|js|mjs|cjs):\d+(?::\d+)?\b/],
  [
    'an error class name',
    /\b(?:QueryFailedError|DatabaseError|TypeORMError|EntityNotFoundError|RangeError|ReferenceError|SyntaxError: Unexpected|TypeError: Cannot)\b/,
  ],
  [
    'a database error text',
    /\b(?:SQLSTATE|syntax error at or near|invalid input syntax for type|violates (?:unique|foreign key|not-null|check) constraint|duplicate key value|relation "[^"]*" does not exist|column "[^"]*" does not exist|out of range for type|invalid byte sequence for encoding|unsupported Unicode escape sequence|date\/time field value out of range|time zone displacement out of range)\b/i,
  ],
  ['a server path', /(?:\/work\/|\/home\/|\/usr\/src\/|\/app\/(?:src|dist)\/)/],
];

/** Node rejects a request head over 16 kB with a bare 431 before HCP sees it; stay well below. */
const MAX_REQUEST_HEAD = 12_000;

/**
 * Runs per property family, spread over the routes it matters for (so more routes do not mean more
 * time); every other route still gets MIN_RUNS_PER_ROUTE.
 */
const BUDGET = {
  paths: 300,
  headers: 300,
  queries: 300,
  query_values: 600,
  everything: 300,
  body_fields: 700,
  body_shapes: 300,
} as const;
type Family = keyof typeof BUDGET;
const MIN_RUNS_PER_ROUTE = 10;
/** A guard against a slow machine; a property interrupted without a failure still passes. */
const TIME_LIMIT_PER_PROPERTY_MS = 20_000;

const PROJECT = 'hostile';
const PEEK = 'peek';
const FOREIGN = 'foreign';

interface Route {
  key: string;
  method: string;
  path: string;
  params: string[];
  policy: RoutePolicy;
}

const ROUTES: Route[] = Object.entries(ROUTE_POLICIES).map(([key, policy]) => {
  const [method, path] = key.split(' ');
  return { key, method, path, params: [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]), policy };
});
const takesBody = (r: Route) => !['GET', 'HEAD'].includes(r.method);
/** The routes each family is aimed at: bodies at routes that take one, query strings at the reads. */
const AIMED_AT: Record<Family, (r: Route) => boolean> = {
  paths: () => true,
  headers: () => true,
  everything: () => true,
  queries: (r) => r.method === 'GET',
  query_values: (r) => r.method === 'GET',
  body_fields: takesBody,
  body_shapes: takesBody,
};
/** Which body a route takes (API.md), so that most generated bodies are nearly valid for it. */
function focusOf(route: Route): BodyFocus {
  if (route.path.startsWith('/v1/projects/')) {
    if (route.method === 'POST' && route.path.endsWith('/vms')) return 'vm-create';
    if (route.method === 'PATCH' && route.path.endsWith('/vms/:vm_id')) return 'vm-labels';
    if (route.path.includes('/actions/')) return 'vm-action';
    return 'other';
  }
  const collection = route.path.split('/')[3];
  const byCollection: Record<string, BodyFocus> = {
    providers: 'provider',
    clusters: 'cluster',
    zones: 'zone',
    images: 'image',
    flavors: 'flavor',
    projects: 'quotas',
  };
  return route.path.startsWith('/v1/ops/') ? (byCollection[collection] ?? 'other') : 'other';
}

const runsOf = (family: Family, route: Route) =>
  AIMED_AT[family](route)
    ? Math.max(MIN_RUNS_PER_ROUTE, Math.ceil(BUDGET[family] / ROUTES.filter(AIMED_AT[family]).length))
    : MIN_RUNS_PER_ROUTE;

// ---------------------------------------------------------------------------------------------------------
// Credentials

const ROLES = ['owner', 'viewer', 'ops', 'break-glass', 'unbound'] as const;
type Role = (typeof ROLES)[number];

type AuthSpec =
  | { as: Role }
  | { none: true }
  | {
      mangled:
        | 'truncated'
        | 'appended'
        | 'no-scheme'
        | 'double-space'
        | 'alg-none'
        | 'forged-claims'
        | 'swapped-signature'
        | 'two-tokens'
        | 'basic'
        | 'lowercase-scheme';
    }
  | { raw: Text };

/** Credentials HCP must accept (the scheme is case-insensitive, RFC 6750 / 9110). */
const isValidCredential = (a: AuthSpec) => 'as' in a || ('mangled' in a && a.mangled === 'lowercase-scheme');

const authArb: fc.Arbitrary<AuthSpec> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ROLES).map((as): AuthSpec => ({ as })) },
  { weight: 1, arbitrary: fc.constant<AuthSpec>({ none: true }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(
        'truncated',
        'appended',
        'no-scheme',
        'double-space',
        'alg-none',
        'forged-claims',
        'swapped-signature',
        'two-tokens',
        'basic',
        'lowercase-scheme' as const,
      )
      .map((mangled): AuthSpec => ({ mangled })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constantFrom<Text>(
          'Bearer',
          'Bearer ',
          'Bearer a.b.c',
          'Bearer null',
          'Bearer undefined',
          'Bearer eyJhbGciOiJub25lIn0.e30.',
          'Token abc',
          'Digest x',
        ),
        headerText,
      )
      .map((raw): AuthSpec => ({ raw })),
  },
);
/** The caller a route is meant for: the project owner on tenant routes, the ops principal on ops routes. */
const rightful = (route: Route): AuthSpec => ({ as: route.policy.scope === 'ops' ? 'ops' : 'owner' });
/** Mostly the rightful caller, so that requests get past the guard and into validation and the handlers. */
const mostlyRightful = (route: Route): fc.Arbitrary<AuthSpec> =>
  fc.oneof({ weight: 5, arbitrary: fc.constant(rightful(route)) }, { weight: 2, arbitrary: authArb });

// ---------------------------------------------------------------------------------------------------------
// One request

interface HeaderSpec {
  idempotencyKey?: Text;
  requestId?: Text;
  traceparent?: Text;
  breakGlassReason?: Text;
  extra?: Array<[string, Text]>;
}

const headerSpecArb: fc.Arbitrary<HeaderSpec> = fc.record(
  {
    idempotencyKey: idempotencyKeyArb,
    requestId: requestIdArb,
    traceparent: traceparentArb,
    breakGlassReason: breakGlassReasonArb,
    extra: fc.array(extraHeaderArb, { maxLength: 3 }),
  },
  { requiredKeys: [] },
);

interface Probe {
  params: PathParam[];
  suffix: PathSuffix;
  query?: QuerySpec;
  auth: AuthSpec;
  headers: HeaderSpec;
  body?: BodyRequest;
}

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

describe('hostile input at every route', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  const tokens = {} as Record<Role, string>;
  let known: { vmIds: string[]; jobIds: string[]; imageId: string; flavorId: string; opsIds: string[] };
  let bodyContext: BodyFieldsContext;
  const stats = { requests: 0, byStatus: new Map<number, number>() };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_RATE_LIMIT_ACTOR_PER_MINUTE: '1000000',
        HCP_RATE_LIMIT_PROJECT_PER_MINUTE: '1000000',
        HCP_SIMULATOR_LATENCY_SCALE: '0',
      },
    });
    tokens.owner = hcp.token('mallory', { [PROJECT]: 'owner', [PEEK]: 'viewer' });
    tokens.viewer = hcp.token('victor', { [PROJECT]: 'viewer' });
    tokens.ops = hcp.token('oscar', {}, ['cloud-operator', 'infra-admin', 'security-auditor']);
    tokens['break-glass'] = hcp.token('bianca', {}, ['break-glass']);
    tokens.unbound = hcp.token('nobody', {});

    const api = new ApiClient(hcp.baseUrl, tokens.owner);
    const choice = await seededChoice(api);
    const vmIds: string[] = [];
    const jobIds: string[] = [];
    for (const name of ['target-1', 'target-2']) {
      const created = await api.post(`/v1/projects/${PROJECT}/vms`, { name, zone: 'local', ...choice });
      expect(created.status).toBe(202);
      expect((await jobFinished(api, PROJECT, created.body.job_id)).status).toBe('succeeded');
      vmIds.push(created.body.resource_id);
      jobIds.push(created.body.job_id);
    }
    // Real targets for the ops routes' `:id`: whatever the ops lists (providers, clusters, zones...) hold.
    const ops = api.as(tokens.ops);
    const opsIds = new Set<string>();
    for (const route of ROUTES.filter(
      (r) => r.method === 'GET' && r.path.startsWith('/v1/ops/') && r.params.length === 0,
    )) {
      const listed = await ops.get(route.path);
      const items: unknown = listed.status === 200 ? listed.body?.items : undefined;
      if (Array.isArray(items))
        for (const item of items.slice(0, 3)) if (typeof item?.id === 'string') opsIds.add(item.id);
    }
    known = { vmIds, jobIds, imageId: choice.image_id, flavorId: choice.flavor_id, opsIds: [...opsIds] };
    bodyContext = {
      imageId: choice.image_id,
      flavorId: choice.flavor_id,
      zone: 'local',
      uuids: [...opsIds, ...vmIds, ...jobIds, choice.image_id, choice.flavor_id],
    };
  });

  afterAll(async () => {
    console.log(
      `hostile input: ${stats.requests} requests; statuses ${JSON.stringify(Object.fromEntries([...stats.byStatus].sort(([a], [b]) => a - b)))}`,
    );
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  /** Real values for a path parameter, the likeliest target first: the resource the path names before it. */
  function knownValues(route: Route, param: string): string[] {
    if (param === 'project_id') return [PROJECT, PEEK, FOREIGN];
    const collection = route.path.split('/').at(route.path.split('/').indexOf(`:${param}`) - 1);
    const first: Record<string, string[]> = {
      vms: known.vmIds,
      jobs: known.jobIds,
      images: [known.imageId],
      flavors: [known.flavorId],
      zones: ['local'],
    };
    const all = [...known.vmIds, ...known.jobIds, known.imageId, known.flavorId, ...known.opsIds, 'local'];
    const preferred = first[collection ?? ''] ?? (known.opsIds.length > 0 ? known.opsIds : all);
    return [...new Set([...preferred, ...all])];
  }

  /** Each of the route's parameters, hostile or real. */
  const hostileParams = (route: Route) =>
    fc.tuple(...route.params.map((p) => pathParamArb(knownValues(route, p)))) as unknown as fc.Arbitrary<PathParam[]>;
  /** Each of the route's parameters with a real value, mostly the first (the owner's project, a live VM). */
  const realParams = (route: Route) =>
    fc.tuple(
      ...route.params.map((p) =>
        fc
          .oneof(
            { weight: 4, arbitrary: fc.constant(knownValues(route, p)[0]) },
            { weight: 1, arbitrary: fc.constantFrom(...knownValues(route, p)) },
          )
          .map((value): PathParam => ({ value, encoding: 'encoded' })),
      ),
    ) as unknown as fc.Arbitrary<PathParam[]>;

  function authorization(auth: AuthSpec): string | undefined {
    if ('none' in auth) return undefined;
    if ('raw' in auth) return textOf(auth.raw);
    if ('as' in auth) return `Bearer ${tokens[auth.as]}`;
    const token = tokens.owner;
    const [header, payload, signature] = token.split('.');
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    switch (auth.mangled) {
      case 'truncated':
        return `Bearer ${token.slice(0, -6)}`;
      case 'appended':
        return `Bearer ${token}x`;
      case 'no-scheme':
        return token;
      case 'double-space':
        return `Bearer  ${token}`;
      case 'lowercase-scheme':
        return `bearer ${token}`;
      case 'alg-none':
        return `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`;
      case 'forged-claims':
        return `Bearer ${header}.${b64({ ...claims, hcp_projects: { [PROJECT]: 'owner', [FOREIGN]: 'owner' }, hcp_ops_roles: ['break-glass', 'infra-admin'] })}.${signature}`;
      case 'swapped-signature':
        return `Bearer ${header}.${payload}.${tokens.viewer.split('.')[2]}`;
      case 'two-tokens':
        return `Bearer ${token}, Bearer ${tokens.viewer}`;
      case 'basic':
        return `Basic ${Buffer.from('mallory:hunter2').toString('base64')}`;
    }
  }

  function build(route: Route, probe: Probe): Sent {
    let i = 0;
    const path = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, () => renderPathParam(probe.params[i++]));
    const url = `${hcp.baseUrl}${path}${renderPathSuffix(probe.suffix)}${renderQuery(probe.query)}`;
    const headers: Record<string, string> = {};
    const set = (name: string, value: Text | undefined) => {
      if (value === undefined) return;
      const text = textOf(value);
      if (!SENDABLE_HEADER_VALUE.test(text))
        throw new Error(`test bug: unsendable ${name} header ${JSON.stringify(text)}`);
      headers[name] = text;
    };
    for (const [name, value] of probe.headers.extra ?? []) set(name, value);
    set('authorization', authorization(probe.auth));
    set('idempotency-key', probe.headers.idempotencyKey);
    set('x-request-id', probe.headers.requestId);
    set('traceparent', probe.headers.traceparent);
    set('x-break-glass-reason', probe.headers.breakGlassReason);
    let body: string | Uint8Array | undefined;
    if (probe.body && takesBody(route)) {
      const rendered = renderBody(probe.body.body);
      // A string body makes fetch add `text/plain`; bytes let "no Content-Type at all" be sent.
      body = probe.body.contentType === null && typeof rendered === 'string' ? Buffer.from(rendered) : rendered;
      if (probe.body.contentType !== null) headers['content-type'] = probe.body.contentType;
      set('content-encoding', probe.body.contentEncoding);
    }
    return { method: route.method, url, headers, body };
  }

  async function send(sent: Sent): Promise<Answer> {
    let res: Response;
    try {
      res = await fetch(sent.url, {
        method: sent.method,
        headers: sent.headers,
        body: sent.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? '';
      throw new Error(
        `no answer to ${describeSent(sent)}: ${String(err)} ${cause}\nHCP log tail:\n${hcp.logs.slice(-3000)}`,
      );
    }
    const answer = { status: res.status, headers: res.headers, text: await res.text() };
    stats.requests += 1;
    stats.byStatus.set(answer.status, (stats.byStatus.get(answer.status) ?? 0) + 1);
    return answer;
  }

  /** Everything wrong with an answer; empty when it keeps the contract. */
  function problemsOf(route: Route, probe: Probe, sent: Sent, answer: Answer): string[] {
    const problems: string[] = [];
    const { status, headers, text } = answer;
    if (status >= 500) problems.push(`answered ${status} (a 5xx)`);
    if (status < 200 || (status >= 300 && status < 400)) problems.push(`answered ${status}`);

    const requestId = headers.get('x-request-id');
    if (!requestId) problems.push('no X-Request-Id header');
    else if (!/^[\x21-\x7e]{1,256}$/.test(requestId))
      problems.push(`X-Request-Id ${JSON.stringify(requestId)} is not a plain token`);
    const given = sent.headers['x-request-id'];
    if (given !== undefined && /^[A-Za-z0-9-]{8,64}$/.test(given) && requestId !== given)
      problems.push(`X-Request-Id ${JSON.stringify(given)} was not echoed (got ${JSON.stringify(requestId)})`);

    if (headers.get('x-content-type-options') !== 'nosniff') problems.push('no X-Content-Type-Options: nosniff');
    const contentType = headers.get('content-type') ?? '';
    // Prometheus scrapes /metrics as its own text format, the webconsole is a page; every other body is JSON.
    const expected =
      route.key === 'GET /metrics' && status === 200
        ? /^text\/plain\s*(?:;|$)/i
        : route.key === 'GET /console/:session_id' && status === 200
          ? /^text\/html\s*(?:;|$)/i
          : /^application\/json\s*(?:;|$)/i;
    if (text.length > 0 && !expected.test(contentType))
      problems.push(`content-type ${JSON.stringify(contentType)} for a body`);

    if (status >= 400) problems.push(...envelopeProblems(status, text, requestId));

    for (const [what, pattern] of LEAKS) {
      const hit = text.match(pattern);
      if (hit) problems.push(`the body leaks ${what}: ${JSON.stringify(hit[0])}`);
    }

    if (status >= 200 && status < 300 && route.policy.scope !== 'public' && !isValidCredential(probe.auth)) {
      problems.push(`answered ${status} to a request without a valid credential (${JSON.stringify(probe.auth)})`);
    }
    return problems;
  }

  function envelopeProblems(status: number, text: string, requestId: string | null): string[] {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return [`error body is not JSON: ${JSON.stringify(text.slice(0, 200))}`];
    }
    const problems: string[] = [];
    const isObject = (v: unknown): v is Record<string, unknown> =>
      typeof v === 'object' && v !== null && !Array.isArray(v);
    if (!isObject(body) || Object.keys(body).join() !== 'error' || !isObject(body.error))
      return [`error body is not { error: {...} }`];
    const error = body.error;
    const extra = Object.keys(error).filter((k) => !['code', 'message', 'trace_id', 'details'].includes(k));
    if (extra.length) problems.push(`error has fields outside the envelope: ${extra.join(', ')}`);
    if (typeof error.code !== 'string' || !(error.code in TAXONOMY))
      problems.push(`error.code ${JSON.stringify(error.code)} is not in API.md's table`);
    else if (TAXONOMY[error.code] !== status)
      problems.push(`error.code ${error.code} maps to ${TAXONOMY[error.code]}, answered with ${status}`);
    if (typeof error.message !== 'string' || error.message.length === 0)
      problems.push('error.message is not a non-empty string');
    if (typeof error.trace_id !== 'string' || error.trace_id.length === 0)
      problems.push('error.trace_id is not a non-empty string');
    else if (error.trace_id !== requestId)
      problems.push(
        `error.trace_id ${JSON.stringify(error.trace_id)} differs from X-Request-Id ${JSON.stringify(requestId)}`,
      );
    if ('details' in error && !isObject(error.details)) problems.push('error.details is not an object');
    return problems;
  }

  function describeSent(sent: Sent): string {
    const headers = Object.entries(sent.headers)
      .map(
        ([k, v]) =>
          `${k}: ${k === 'authorization' ? v.replace(/([A-Za-z0-9_-]{12})[A-Za-z0-9_.-]{20,}/, '$1…') : clip(v, 120)}`,
      )
      .join('\n  ');
    const body =
      sent.body === undefined
        ? ''
        : `\n  body (${sent.body.length} ${typeof sent.body === 'string' ? 'chars' : 'bytes'}): ${clip(typeof sent.body === 'string' ? sent.body : Buffer.from(sent.body).toString('latin1'), 300)}`;
    return `${sent.method} ${clip(sent.url, 400)}\n  ${headers}${body}`;
  }

  /** HCP's own log lines about a request (error type, message, top frames), to name the cause of a 5xx. */
  function logLinesOf(traceId: string | null): string {
    if (!traceId) return '';
    const lines = hcp.logs.split('\n').filter((l) => l.includes(traceId));
    const summaries = lines.map((line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string; stack?: string } };
        // Not indented `at ...` lines: Jest would take them for this error's own stack.
        const frames = (entry.err?.stack ?? '')
          .split('\n')
          .filter((f) => /^\s+at /.test(f))
          .slice(0, 4)
          .map((f) => `<- ${f.trim().replace(/^at /, '')}`);
        return `${entry.msg ?? ''}: ${entry.err?.type ?? ''}: ${entry.err?.message ?? ''}${frames.length ? ` ${frames.join(' ')}` : ''}`;
      } catch {
        return clip(line, 600);
      }
    });
    return summaries.length ? `\nHCP log for ${traceId}:\n  ${summaries.join('\n  ')}` : '';
  }

  /** The property's body: send, check, and fail with a report that names the request and the answer. */
  async function probeHolds(route: Route, probe: Probe): Promise<void> {
    const sent = build(route, probe);
    fc.pre(requestHeadSize(sent) <= MAX_REQUEST_HEAD);
    const answer = await send(sent);
    const problems = problemsOf(route, probe, sent, answer);
    if (problems.length > 0) {
      // HCP's log line about the request may still be on its way through the pipe.
      if (answer.status >= 500) await new Promise((r) => setTimeout(r, 150));
      throw new Error(
        `${route.key}: ${problems.join('; ')}\nrequest:\n  ${describeSent(sent)}\nanswer: ${answer.status} ${answer.headers.get('content-type') ?? ''}\n  ${clip(answer.text, 600)}${logLinesOf(answer.headers.get('x-request-id'))}`,
      );
    }
  }

  async function check(family: Family, route: Route, probe: fc.Arbitrary<Probe>): Promise<void> {
    await fc.assert(
      fc.asyncProperty(probe, (p) => probeHolds(route, p)),
      {
        seed: seedOf(`${family} ${route.key}`),
        numRuns: runsOf(family, route),
        plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_PER_PROPERTY_MS)],
      },
    );
  }

  describe.each(ROUTES.map((r) => [r.key, r] as const))('%s', (_key, route) => {
    it('survives hostile path parameters and path suffixes', async () => {
      await check(
        'paths',
        route,
        fc.record({
          params: hostileParams(route),
          suffix: pathSuffixArb,
          auth: mostlyRightful(route),
          headers: fc.constant({}),
        }),
      );
    });

    it('survives hostile headers and credentials', async () => {
      await check(
        'headers',
        route,
        fc.record({
          params: realParams(route),
          suffix: fc.constant<PathSuffix>(''),
          auth: authArb,
          headers: headerSpecArb,
        }),
      );
    });

    it('survives hostile query strings', async () => {
      await check(
        'queries',
        route,
        fc.record({
          params: realParams(route),
          suffix: fc.constant<PathSuffix>(''),
          query: querySpecArb,
          auth: mostlyRightful(route),
          headers: fc.constant({}),
        }),
      );
    });

    it('survives one read parameter (paging, filters) with a hostile value', async () => {
      await check(
        'query_values',
        route,
        fc.record({
          params: realParams(route),
          suffix: fc.constant<PathSuffix>(''),
          query: twistedQuerySpecArb,
          auth: fc.constant(rightful(route)),
          headers: fc.constant({}),
        }),
      );
    });

    it('survives everything at once', async () => {
      await check(
        'everything',
        route,
        fc.record(
          {
            params: fc.oneof(realParams(route), hostileParams(route)),
            suffix: pathSuffixArb,
            query: querySpecArb,
            auth: authArb,
            headers: headerSpecArb,
            body: anyBodyRequestArb(bodyContext),
          },
          { requiredKeys: ['params', 'suffix', 'auth', 'headers'] },
        ),
      );
    });

    if (takesBody(route)) {
      /** Mostly without, sometimes with an Idempotency-Key, so that keyed requests meet hostile bodies too. */
      const keyMaybe = fc.oneof(
        { weight: 3, arbitrary: fc.constant<HeaderSpec>({}) },
        { weight: 1, arbitrary: idempotencyKeyArb.map((idempotencyKey): HeaderSpec => ({ idempotencyKey })) },
      );

      it('survives hostile fields in JSON bodies', async () => {
        await check(
          'body_fields',
          route,
          fc.record({
            params: realParams(route),
            suffix: fc.constant<PathSuffix>(''),
            auth: mostlyRightful(route),
            headers: keyMaybe,
            body: bodyRequestArb(fieldBodySpecArb(bodyContext, focusOf(route)), 'json'),
          }),
        );
      });

      it('survives hostile body shapes, content types and encodings', async () => {
        await check(
          'body_shapes',
          route,
          fc.record({
            params: realParams(route),
            suffix: fc.constant<PathSuffix>(''),
            auth: mostlyRightful(route),
            headers: keyMaybe,
            body: bodyRequestArb(shapeBodySpecArb, 'any'),
          }),
        );
      });
    }
  });

  // Runs after every property above (jest keeps declaration order within a file): what those thousands of
  // hostile requests wrote to the event store must not stop or poison any projection.
  describe('after the hostile requests', () => {
    it('lets every projection reach the last event of its streams, with no dead letter', async () => {
      const projections = [
        ...readModelProjections(SILENT_SINKS),
        // Process managers, built only to read their names and streams (they touch nothing here).
        new VmJobDispatcherProjection(undefined as never, undefined as never),
        new QuotaReleaseProjection(undefined as never),
      ];
      const behind = async (): Promise<string[]> => {
        const late: string[] = [];
        for (const projection of projections) {
          const [last] = await queryDatabase<{ position: string | null }>(
            db.url,
            'SELECT max(position)::text AS position FROM hcp_events WHERE stream_id LIKE ANY($1)',
            [projection.streamPrefixes.map((prefix) => `${prefix}%`)],
          );
          if (last?.position == null) continue;
          const [checkpoint] = await queryDatabase<{ position: string }>(
            db.url,
            'SELECT position::text AS position FROM projection_checkpoints WHERE name = $1',
            [projection.name],
          );
          if (!checkpoint || BigInt(checkpoint.position) < BigInt(last.position)) late.push(projection.name);
        }
        return late;
      };
      await eventually(
        async () => ((await behind()).length === 0 ? true : undefined),
        'every projection to reach the last event of its streams',
      ).catch(async (err) => {
        throw new Error(`${(err as Error).message}; behind: ${(await behind()).join(', ')}`);
      });
      const deadLetters = await queryDatabase(
        db.url,
        'SELECT projection, event_type, stream_id, error FROM projection_dead_letters',
      );
      expect(deadLetters).toEqual([]);
    });
  });
});

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}

function requestHeadSize(sent: Sent): number {
  return (
    new URL(sent.url).href.length +
    Object.entries(sent.headers).reduce((n, [k, v]) => n + k.length + Buffer.byteLength(v, 'latin1') + 4, 0) +
    200
  );
}

/** A stable 31-bit seed per property name (FNV-1a), so every run replays the same inputs. */
function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return (h >>> 0) & 0x7fffffff;
}
