import { closedPort, envelope, ScriptedServer } from '../test/scripted-server.fixture';
import { createHcpClient, HcpApiError, newIdempotencyKey, unwrap } from './index';

describe('createHcpClient', () => {
  let server: ScriptedServer;
  afterEach(() => server?.close());

  it('sends the bearer token, the user agent and the path parameters, and unwrap gives the data', async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: { id: 'vm-1', name: 'web-1' } }));
    const client = createHcpClient({ baseUrl: `${server.baseUrl}/`, token: 't0k3n', userAgent: 'gateway/1.2' });
    const vm = unwrap(
      await client.GET('/v1/projects/{project_id}/vms/{vm_id}', {
        params: { path: { project_id: 'p1', vm_id: 'vm-1' } },
      }),
    );
    expect(vm).toEqual({ id: 'vm-1', name: 'web-1' });
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/v1/projects/p1/vms/vm-1' });
    expect(server.requests[0].headers.authorization).toBe('Bearer t0k3n');
    expect(server.requests[0].headers['user-agent']).toBe('gateway/1.2');
  });

  it('asks a token function before every request', async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: { items: [], next_cursor: null } }));
    let issued = 0;
    const client = createHcpClient({ baseUrl: server.baseUrl, token: async () => `token-${++issued}` });
    await client.GET('/v1/zones');
    await client.GET('/v1/zones');
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  it("lets one call's Authorization header win over the client's token", async () => {
    server = await ScriptedServer.start(() => ({ status: 200, body: { items: [], next_cursor: null } }));
    const client = createHcpClient({ baseUrl: server.baseUrl, token: 'default' });
    await client.GET('/v1/zones', { headers: { authorization: 'Bearer other' } });
    expect(server.requests[0].headers.authorization).toBe('Bearer other');
  });

  it('sends a JSON body, the Idempotency-Key header, and tag filters as repeated parameters', async () => {
    server = await ScriptedServer.start((req) =>
      req.method === 'POST'
        ? { status: 202, headers: { location: '/v1/projects/p1/jobs/j1' }, body: { resource_id: 'vm-1', job_id: 'j1' } }
        : { status: 200, body: { items: [], next_cursor: null } },
    );
    const client = createHcpClient({ baseUrl: server.baseUrl, token: 't' });
    const key = newIdempotencyKey();
    const accepted = unwrap(
      await client.POST('/v1/projects/{project_id}/vms', {
        params: { path: { project_id: 'p1' }, header: { 'Idempotency-Key': key } },
        body: { name: 'web-1', zone: 'local', image_id: 'i', flavor_id: 'f' },
      }),
    );
    expect(accepted).toEqual({ resource_id: 'vm-1', job_id: 'j1' });
    expect(server.requests[0].headers['idempotency-key']).toBe(key);
    expect(server.requests[0].headers['content-type']).toBe('application/json');
    expect(JSON.parse(server.requests[0].body)).toEqual({
      name: 'web-1',
      zone: 'local',
      image_id: 'i',
      flavor_id: 'f',
    });

    await client.GET('/v1/projects/{project_id}/vms', {
      params: { path: { project_id: 'p1' }, query: { tag: ['env:dev', 'team:a'], limit: 2 } },
    });
    expect(server.requests[1].url).toBe('/v1/projects/p1/vms?tag=env%3Adev&tag=team%3Aa&limit=2');
  });
});

describe('unwrap', () => {
  let server: ScriptedServer;
  afterEach(() => server?.close());

  it("throws HCP's error envelope as an HcpApiError with its code, details, request id and Retry-After", async () => {
    server = await ScriptedServer.start(() => ({
      status: 503,
      headers: { 'x-request-id': 'req-42', 'retry-after': '7' },
      body: envelope('PROVIDER_UNAVAILABLE', 'database unreachable', { dependency: 'database' }),
    }));
    const client = createHcpClient({ baseUrl: server.baseUrl });
    const caught = thrownBy(unwrap, await client.GET('/v1/zones'));
    expect(caught).toBeInstanceOf(HcpApiError);
    expect(caught).toMatchObject({
      status: 503,
      code: 'PROVIDER_UNAVAILABLE',
      message: 'database unreachable',
      details: { dependency: 'database' },
      requestId: 'req-42',
      retryAfterS: 7,
    });
  });

  it("takes the request id from the envelope's trace_id when the answer has no X-Request-Id", async () => {
    server = await ScriptedServer.start(() => ({ status: 404, body: envelope('NOT_FOUND', 'no such VM') }));
    const client = createHcpClient({ baseUrl: server.baseUrl });
    const result = await client.GET('/v1/images/{id}', { params: { path: { id: 'x' } } });
    expect(() => unwrap(result)).toThrow(
      expect.objectContaining({ status: 404, code: 'NOT_FOUND', requestId: 'trace-1' }),
    );
  });

  it('reads an HTTP-date Retry-After as the seconds left', async () => {
    const at = new Date(Date.now() + 120_000).toUTCString();
    server = await ScriptedServer.start(() => ({
      status: 429,
      headers: { 'retry-after': at },
      body: envelope('RATE_LIMITED', 'slow down'),
    }));
    const client = createHcpClient({ baseUrl: server.baseUrl });
    const error = thrownBy(unwrap, await client.GET('/v1/zones'));
    expect(error).toBeInstanceOf(HcpApiError);
    const retryAfterS = (error as HcpApiError).retryAfterS!;
    expect(retryAfterS).toBeGreaterThan(100);
    expect(retryAfterS).toBeLessThanOrEqual(120);
  });

  it('keeps the status of an answer that is not an envelope, as UNEXPECTED_RESPONSE', async () => {
    server = await ScriptedServer.start(() => ({ status: 502, body: '<html>bad gateway</html>' }));
    const client = createHcpClient({ baseUrl: server.baseUrl });
    const result = await client.GET('/v1/zones');
    expect(() => unwrap(result)).toThrow(expect.objectContaining({ status: 502, code: 'UNEXPECTED_RESPONSE' }));
  });

  it('answers no data, without throwing, for a success without a body', async () => {
    server = await ScriptedServer.start(() => ({ status: 204 }));
    const client = createHcpClient({ baseUrl: server.baseUrl });
    expect(unwrap(await client.DELETE('/v1/ops/images/{id}', { params: { path: { id: 'i' } } }))).toBeUndefined();
  });
});

describe('a server that does not answer', () => {
  it('throws HcpApiError UNREACHABLE (status 0) naming the cause when nothing listens', async () => {
    const client = createHcpClient({ baseUrl: `http://127.0.0.1:${await closedPort()}` });
    const err = await client.GET('/v1/zones').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HcpApiError);
    expect(err).toMatchObject({ status: 0, code: 'UNREACHABLE' });
    expect((err as Error).message).toContain('ECONNREFUSED');
  });

  it('stays an abort, not UNREACHABLE, when the caller aborts', async () => {
    const server = await ScriptedServer.start(() => 'hang');
    try {
      const client = createHcpClient({ baseUrl: server.baseUrl });
      const abort = new AbortController();
      const pending = client.GET('/v1/zones', { signal: abort.signal }).catch((e: unknown) => e);
      await waitUntil(() => server.requests.length === 1);
      abort.abort();
      const err = await pending;
      expect(err).not.toBeInstanceOf(HcpApiError);
      expect((err as Error).name).toBe('AbortError');
    } finally {
      await server.close();
    }
  });
});

describe('newIdempotencyKey', () => {
  it('makes UUID v4 keys, a new one each time', () => {
    const keys = Array.from({ length: 100 }, () => newIdempotencyKey());
    for (const key of keys)
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!condition()) throw new Error('condition never held');
}

function thrownBy<A>(fn: (arg: A) => unknown, arg: A): unknown {
  try {
    fn(arg);
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
}
