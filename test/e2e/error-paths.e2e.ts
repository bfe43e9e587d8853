import { randomUUID } from 'node:crypto';
import { ApiClient, ApiResponse, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { whileSimulatorHoldsVm } from '../support/simulator-hold';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/**
 * Every error path answers the taxonomy envelope of API.md: `{ error: { code, message, details?, trace_id } }`
 * with `trace_id` equal to the `X-Request-Id` response header.
 */
function expectError(
  res: ApiResponse,
  status: number,
  code: string,
): { code: string; message: string; details?: any; trace_id: string } {
  const requestId = res.headers.get('x-request-id');
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: { code } } });
  expect(requestId).toEqual(expect.any(String));
  expect(requestId!.length).toBeGreaterThan(0);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const { error } = res.body;
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(error).toEqual({
    code,
    message: expect.any(String),
    trace_id: requestId,
    ...(error.details !== undefined ? { details: expect.any(Object) } : {}),
  });
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

/**
 * Fields a validation error names. The validation pipe answers `details.fields: [{ field, problems }]`;
 * checks done by services answer `details.field`. Both are accepted here (API.md does not fix the shape).
 */
function offendingFields(error: { details?: any }): string[] {
  const details = error.details ?? {};
  return Array.isArray(details.fields) ? details.fields.map((f: { field: string }) => f.field) : [];
}

/** base64url of any JSON value: the shape of HCP's cursors, with a key it never issued. */
const forgedCursor = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');

function expectInvalid(res: ApiResponse, field?: string): void {
  const error = expectError(res, 400, 'INVALID_REQUEST');
  if (field) expect(offendingFields(error)).toContain(field);
}

describe('HTTP error paths', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  /** alice: admin of `a`, viewer of `b`. */
  let alice: ApiClient;
  /** bob: no binding to `a` (admin of his own project `bobs`). */
  let bob: ApiClient;
  /** carol: admin of `b` only, so she may act on VMs of `b` but must never see `a`'s. */
  let carol: ApiClient;
  let operator: ApiClient;
  let viewer: ApiClient;
  let anonymous: ApiClient;
  let choice: { image_id: string; flavor_id: string };
  /** VMs of project `a`, each created in beforeAll and settled. */
  const vm: Record<'running' | 'stopped' | 'ops' | 'doomed', { id: string; jobId: string }> = {} as never;

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.5' } });
    alice = new ApiClient(hcp.baseUrl, hcp.token('alice', { a: 'admin', b: 'viewer' }));
    bob = alice.as(hcp.token('bob', { bobs: 'admin' }));
    carol = alice.as(hcp.token('carol', { b: 'admin' }));
    operator = alice.as(hcp.token('olga', { a: 'operator' }));
    viewer = alice.as(hcp.token('victor', { a: 'viewer' }));
    anonymous = alice.as(undefined);
    choice = await seededChoice(alice);

    const specs = { running: true, stopped: false, ops: false, doomed: true } as const;
    await Promise.all(
      Object.entries(specs).map(async ([key, powerOn]) => {
        const res = await alice.post('/v1/projects/a/vms', {
          name: `fixture-${key}`,
          zone: 'local',
          ...choice,
          power_on: powerOn,
        });
        expect(res.status).toBe(202);
        vm[key as keyof typeof vm] = { id: res.body.resource_id, jobId: res.body.job_id };
        expect(await jobFinished(alice, 'a', res.body.job_id)).toMatchObject({ status: 'succeeded' });
      }),
    );
  }, 90_000);

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  const path = (project: string, id: string, suffix = '') => `/v1/projects/${project}/vms/${id}${suffix}`;

  describe('404 NOT_FOUND never reveals another project', () => {
    it('answers 404 when a VM of project a is asked for under project b, where the caller is a viewer', async () => {
      expect((await alice.get(path('a', vm.running.id))).status).toBe(200);
      expectError(await alice.get(path('b', vm.running.id)), 404, 'NOT_FOUND');
    });

    it('answers 404 to a caller without a binding to the project, for the VM, the list and every action', async () => {
      const id = vm.running.id;
      expectError(await bob.get(path('a', id)), 404, 'NOT_FOUND');
      expectError(await bob.get('/v1/projects/a/vms'), 404, 'NOT_FOUND');
      expectError(await bob.post(path('a', id, '/actions/start'), {}), 404, 'NOT_FOUND');
      expectError(await bob.post(path('a', id, '/actions/stop'), { force: false }), 404, 'NOT_FOUND');
      expectError(await bob.post(path('a', id, '/actions/reboot'), { force: false }), 404, 'NOT_FOUND');
      expectError(await bob.patch(path('a', id), { tags: { x: 'y' } }), 404, 'NOT_FOUND');
      expectError(await bob.delete(path('a', id)), 404, 'NOT_FOUND');
      expectError(await bob.get(`/v1/projects/a/jobs/${vm.running.jobId}`), 404, 'NOT_FOUND');
      expectError(await bob.get('/v1/projects/a/jobs'), 404, 'NOT_FOUND');
      // The same answer as for a project that does not exist at all: nothing to probe.
      expectError(await bob.get(path('no-such-project', id)), 404, 'NOT_FOUND');
    });

    it('answers 404 to an admin of project b acting on a VM of project a through b', async () => {
      const id = vm.running.id;
      expectError(await carol.get(path('b', id)), 404, 'NOT_FOUND');
      expectError(await carol.post(path('b', id, '/actions/stop'), { force: true }), 404, 'NOT_FOUND');
      expectError(await carol.post(path('b', id, '/actions/reboot'), {}), 404, 'NOT_FOUND');
      expectError(await carol.patch(path('b', id), { tags: { owned: 'carol' } }), 404, 'NOT_FOUND');
      expectError(await carol.delete(path('b', id)), 404, 'NOT_FOUND');
      expectError(await carol.get(`/v1/projects/b/jobs/${vm.running.jobId}`), 404, 'NOT_FOUND');
      expect((await carol.get('/v1/projects/b/vms')).body.items).toEqual([]);
      // None of that touched the VM.
      const after = (await alice.get(path('a', id))).body;
      expect(after).toMatchObject({ status: 'running', tags: {}, last_job_id: vm.running.jobId });
    });

    it('answers 404 for an unknown VM id and an unknown job id', async () => {
      const unknown = randomUUID();
      expectError(await alice.get(path('a', unknown)), 404, 'NOT_FOUND');
      expectError(await alice.post(path('a', unknown, '/actions/start'), {}), 404, 'NOT_FOUND');
      expectError(await alice.delete(path('a', unknown)), 404, 'NOT_FOUND');
      expectError(await alice.patch(path('a', unknown), { tags: { a: 'b' } }), 404, 'NOT_FOUND');
      expectError(await alice.get(`/v1/projects/a/jobs/${unknown}`), 404, 'NOT_FOUND');
    });

    it('answers the 404 envelope for an unknown route and for a method a route does not have', async () => {
      expectError(await alice.get('/v1/nope'), 404, 'NOT_FOUND');
      expectError(await alice.get(`/v1/projects/a/vms/${vm.running.id}/actions`), 404, 'NOT_FOUND');
      expectError(await alice.raw('PUT', path('a', vm.running.id), '{}'), 404, 'NOT_FOUND');
      expectError(await alice.delete('/v1/projects/a/vms'), 404, 'NOT_FOUND');
      expectError(await alice.get(path('a', vm.running.id, '/actions/start')), 404, 'NOT_FOUND');
    });
  });

  describe('409 CONFLICT for transitions the VM state does not allow', () => {
    it('refuses to start a running VM and names its status', async () => {
      const error = expectError(await alice.post(path('a', vm.running.id, '/actions/start'), {}), 409, 'CONFLICT');
      expect(error.details).toMatchObject({ status: 'running' });
    });

    it('refuses to reboot a stopped VM and names its status', async () => {
      const error = expectError(
        await alice.post(path('a', vm.stopped.id, '/actions/reboot'), { force: false }),
        409,
        'CONFLICT',
      );
      expect(error.details).toMatchObject({ status: 'stopped' });
      // ...and stopping a stopped VM is a conflict too.
      expect(
        expectError(await alice.post(path('a', vm.stopped.id, '/actions/stop'), {}), 409, 'CONFLICT').details,
      ).toMatchObject({ status: 'stopped' });
    });

    it('refuses a second delete while the first is in progress, and any action on a deleting VM', async () => {
      // The simulator cannot remove the VM while the test holds it: the delete stays in progress (the VM
      // `deleting`) for every request below, however long they take, and finishes once released.
      const first = await whileSimulatorHoldsVm(db.url, vm.doomed.id, async () => {
        const accepted = await alice.delete(path('a', vm.doomed.id));
        expect(accepted.status).toBe(202);
        const second = await alice.delete(path('a', vm.doomed.id));
        expect(expectError(second, 409, 'CONFLICT').details).toMatchObject({ status: 'deleting' });
        expect(
          expectError(await alice.post(path('a', vm.doomed.id, '/actions/start'), {}), 409, 'CONFLICT').details,
        ).toMatchObject({ status: 'deleting' });
        expectError(await alice.patch(path('a', vm.doomed.id), { tags: { late: 'yes' } }), 409, 'CONFLICT');
        return accepted;
      });

      // Only one delete job exists, and once it is done the VM is gone: another delete is NOT_FOUND.
      expect(await jobFinished(alice, 'a', first.body.job_id)).toMatchObject({
        type: 'vm.delete',
        status: 'succeeded',
      });
      const jobs = await alice.get(`/v1/projects/a/jobs?resource_id=${vm.doomed.id}`);
      expect(jobs.body.items.map((j: { type: string }) => j.type)).toEqual(['vm.delete', 'vm.create']);
      expectError(await alice.delete(path('a', vm.doomed.id)), 404, 'NOT_FOUND');
    });
  });

  describe('400 INVALID_REQUEST names what is wrong', () => {
    const create = (body: Record<string, unknown>) =>
      alice.post('/v1/projects/a/vms', { name: 'bad-1', zone: 'local', ...choice, ...body });

    it('refuses a body that is not JSON', async () => {
      expectInvalid(await alice.raw('POST', '/v1/projects/a/vms', '{"name": "x", '));
      expectInvalid(await alice.raw('POST', '/v1/projects/a/vms', 'not json at all'));
      expectInvalid(await alice.raw('POST', path('a', vm.running.id, '/actions/stop'), '{force: true}'));
      expectInvalid(await alice.raw('POST', '/v1/projects/a/vms', '"just a string"'));
      expectInvalid(await alice.raw('POST', '/v1/projects/a/vms', '[]'));
      expectInvalid(await alice.raw('PATCH', path('a', vm.running.id), '{"tags": {"a": "b"}'));
    });

    it('refuses an unknown field in the create body', async () => {
      expectInvalid(await create({ colour: 'blue' }), 'colour');
      expectInvalid(await create({ vmid: 100 }), 'vmid');
    });

    it('refuses wrong types', async () => {
      expectInvalid(await create({ name: 123 }), 'name');
      expectInvalid(await create({ power_on: 'yes' }), 'power_on');
      expectInvalid(await create({ tags: ['a'] }), 'tags');
      expectInvalid(await create({ ssh_keys: 'ssh-ed25519 AAAA' }), 'ssh_keys');
      expectInvalid(await alice.post(path('a', vm.running.id, '/actions/stop'), { force: 'yes' }), 'force');
      expectInvalid(await alice.patch(path('a', vm.running.id), { metadata: 'owner=me' }), 'metadata');
    });

    it('refuses a PATCH with nothing to update', async () => {
      expectInvalid(await alice.patch(path('a', vm.running.id), {}));
    });

    it('refuses a name that is too long or has bad characters', async () => {
      expectInvalid(await create({ name: 'a'.repeat(64) }), 'name');
      expectInvalid(await create({ name: 'web_1' }), 'name');
      expectInvalid(await create({ name: '-web' }), 'name');
      expectInvalid(await create({ name: 'web 1' }), 'name');
      expectInvalid(await create({ name: '' }), 'name');
    });

    it('refuses a path id that is not a UUID', async () => {
      expectInvalid(await alice.get(path('a', 'not-a-uuid')));
      expectInvalid(await alice.post(path('a', '12345', '/actions/start'), {}));
      expectInvalid(await alice.delete(path('a', 'x')));
      expectInvalid(await alice.get('/v1/projects/a/jobs/not-a-uuid'));
    });

    it('refuses an image_id that is not a UUID, and references the catalog does not know', async () => {
      expectInvalid(await create({ image_id: 'debian-12' }), 'image_id');
      expectInvalid(await create({ flavor_id: 'small' }), 'flavor_id');
      expectInvalid(await create({ zone: 'nowhere' }), 'zone');
      expectInvalid(await create({ image_id: randomUUID() }), 'image_id');
      expectInvalid(await create({ flavor_id: randomUUID() }), 'flavor_id');
    });

    it('refuses list limits out of 1..200 and non-numbers', async () => {
      expect((await alice.get('/v1/projects/a/vms?limit=1')).status).toBe(200);
      expect((await alice.get('/v1/projects/a/vms?limit=200')).status).toBe(200);
      for (const limit of ['0', '201', 'abc', '-1', '1.5']) {
        expectInvalid(await alice.get(`/v1/projects/a/vms?limit=${limit}`), 'limit');
      }
      expectInvalid(await alice.get('/v1/projects/a/jobs?limit=0'), 'limit');
    });

    it('refuses an unknown status filter', async () => {
      expectInvalid(await alice.get('/v1/projects/a/vms?status=bogus'), 'status');
      expectInvalid(await alice.get('/v1/projects/a/jobs?status=done'), 'status');
    });

    it('refuses a garbage cursor instead of failing inside', async () => {
      expectInvalid(await alice.get('/v1/projects/a/vms?cursor=!!!'), 'cursor');
      expectInvalid(await alice.get('/v1/projects/a/vms?cursor=garbage'), 'cursor');
      expectInvalid(await alice.get('/v1/projects/a/jobs?cursor=garbage'), 'cursor');
      // Well-formed base64url of JSON, but not a key HCP ever issued.
      expectInvalid(await alice.get(`/v1/projects/a/vms?cursor=${forgedCursor({ a: 1 })}`), 'cursor');
      expectInvalid(
        await alice.get(`/v1/projects/a/vms?cursor=${forgedCursor(['not a date', randomUUID()])}`),
        'cursor',
      );
    });

    // A cursor is opaque, but a client can still send any bytes: a key PostgreSQL cannot read must be
    // the client's INVALID_REQUEST, never an INTERNAL_ERROR from the database.
    it('refuses a forged cursor whose time JavaScript parses but PostgreSQL does not', async () => {
      expectInvalid(await alice.get(`/v1/projects/a/vms?cursor=${forgedCursor(['1', randomUUID()])}`), 'cursor');
      expectInvalid(await alice.get(`/v1/projects/a/jobs?cursor=${forgedCursor(['1', randomUUID()])}`), 'cursor');
    });

    it('refuses a forged cursor whose id is not a UUID', async () => {
      expectInvalid(
        await alice.get(`/v1/projects/a/vms?cursor=${forgedCursor([new Date().toISOString(), '-'.repeat(36)])}`),
        'cursor',
      );
    });

    it('refuses too many tags and a tag value that is too long', async () => {
      const tags = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
      expectInvalid(await create({ tags }), 'tags');
      expectInvalid(await create({ tags: { env: 'x'.repeat(256) } }), 'tags');
      expectInvalid(await create({ tags: { env: 1 } }), 'tags');
      expectInvalid(await alice.patch(path('a', vm.running.id), { tags }), 'tags');
      // The limits themselves are accepted (and nothing above created a VM).
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'.repeat(255)]));
      expect((await alice.patch(path('a', vm.stopped.id), { tags: fifty })).status).toBe(200);
    });

    it('refuses user_data that is not base64 and ssh keys that are not OpenSSH key lines', async () => {
      expectInvalid(await create({ user_data: 'not base64!' }), 'user_data');
      expectInvalid(await create({ user_data: '#cloud-config\npackages: [nginx]' }), 'user_data');
      expectInvalid(await create({ ssh_keys: ['hello'] }), 'ssh_keys');
      expectInvalid(
        await create({ ssh_keys: ['-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----'] }),
        'ssh_keys',
      );
      expectInvalid(await create({ ssh_keys: ['ssh-ed25519 AAAA\nssh-rsa BBBB'] }), 'ssh_keys');
    });

    it('refuses unknown query parameters', async () => {
      expectInvalid(await alice.get('/v1/projects/a/vms?colour=blue'), 'colour');
    });

    it('answers the envelope, not an HTML page, for a body over the size limit', async () => {
      const userData = Buffer.alloc(300 * 1024, 'a').toString('base64');
      const res = await alice.post('/v1/projects/a/vms', {
        name: 'huge-1',
        zone: 'local',
        ...choice,
        user_data: userData,
      });
      expectInvalid(res);
      expect(typeof res.body).toBe('object');
    });

    it('created no VM through any of the refused requests', async () => {
      const names = (await alice.get('/v1/projects/a/vms?limit=200')).body.items
        .map((v: { name: string }) => v.name)
        .sort();
      expect(names).toEqual(['fixture-ops', 'fixture-running', 'fixture-stopped']);
    });
  });

  describe('403 FORBIDDEN for a role too low in a bound project', () => {
    it('refuses a create by a viewer and by an operator (admin is needed)', async () => {
      const body = { name: 'nope-1', zone: 'local', ...choice };
      expect(expectError(await viewer.post('/v1/projects/a/vms', body), 403, 'FORBIDDEN').details).toMatchObject({
        required_role: 'admin',
      });
      expectError(await operator.post('/v1/projects/a/vms', body), 403, 'FORBIDDEN');
      expectError(await alice.post('/v1/projects/b/vms', body), 403, 'FORBIDDEN');
    });

    it('refuses a delete and a PATCH by an operator', async () => {
      expectError(await operator.delete(path('a', vm.running.id)), 403, 'FORBIDDEN');
      expectError(await operator.patch(path('a', vm.running.id), { tags: { by: 'operator' } }), 403, 'FORBIDDEN');
    });

    it('refuses start, stop and reboot by a viewer', async () => {
      expectError(await viewer.post(path('a', vm.running.id, '/actions/stop'), { force: false }), 403, 'FORBIDDEN');
      expectError(await viewer.post(path('a', vm.running.id, '/actions/reboot'), {}), 403, 'FORBIDDEN');
      expectError(await viewer.post(path('a', vm.stopped.id, '/actions/start'), {}), 403, 'FORBIDDEN');
      // A viewer still reads.
      expect((await viewer.get(path('a', vm.running.id))).status).toBe(200);
      const after = (await alice.get(path('a', vm.running.id))).body;
      expect(after).toMatchObject({ status: 'running', tags: {}, last_job_id: vm.running.jobId });
    });

    it('lets an operator start and stop a VM', async () => {
      const started = await operator.post(path('a', vm.ops.id, '/actions/start'), {});
      expect(started.status).toBe(202);
      expect(await jobFinished(operator, 'a', started.body.job_id)).toMatchObject({
        type: 'vm.start',
        status: 'succeeded',
      });
      const stopped = await operator.post(path('a', vm.ops.id, '/actions/stop'), { force: true });
      expect(stopped.status).toBe(202);
      expect(await jobFinished(operator, 'a', stopped.body.job_id)).toMatchObject({
        type: 'vm.stop',
        status: 'succeeded',
      });
    });
  });

  describe('request ids', () => {
    it('echoes a client X-Request-Id on success and on error', async () => {
      const ok = await alice.get('/v1/projects/a/vms', { 'x-request-id': 'client-req-42' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('client-req-42');

      const notFound = await alice.get(path('a', randomUUID()), { 'x-request-id': 'client-req-43' });
      expect(expectError(notFound, 404, 'NOT_FOUND').trace_id).toBe('client-req-43');
      const unauthorized = await anonymous.get('/v1/projects/a/vms', { 'x-request-id': 'client-req-44' });
      expect(expectError(unauthorized, 401, 'UNAUTHORIZED').trace_id).toBe('client-req-44');
      const badJson = await alice.raw('POST', '/v1/projects/a/vms', '{', { 'x-request-id': 'client-req-45' });
      expect(expectError(badJson, 400, 'INVALID_REQUEST').trace_id).toBe('client-req-45');
    });

    it('uses the trace id of a traceparent header when no X-Request-Id is given', async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
      const ok = await alice.get('/v1/projects/a/vms', { traceparent });
      expect(ok.headers.get('x-request-id')).toBe(traceId);
      const conflict = await alice.post(path('a', vm.running.id, '/actions/start'), {}, { traceparent });
      expect(expectError(conflict, 409, 'CONFLICT').trace_id).toBe(traceId);
      // X-Request-Id wins over traceparent.
      expect(
        (await alice.get('/v1/projects/a/vms', { traceparent, 'x-request-id': 'mine-1' })).headers.get('x-request-id'),
      ).toBe('mine-1');
    });

    it('generates a new id for each request otherwise, and the job carries it', async () => {
      const first = await alice.get('/v1/projects/a/vms');
      const second = await alice.get('/v1/projects/a/vms');
      const [a, b] = [first.headers.get('x-request-id'), second.headers.get('x-request-id')];
      expect(a).toEqual(expect.stringMatching(/^\S{8,128}$/));
      expect(b).toEqual(expect.stringMatching(/^\S{8,128}$/));
      expect(a).not.toBe(b);
      // A malformed client id is replaced, not echoed.
      const bad = await alice.get('/v1/projects/a/vms', { 'x-request-id': 'has spaces and <html>' });
      expect(bad.headers.get('x-request-id')).not.toBe('has spaces and <html>');
      expect(bad.headers.get('x-request-id')).toEqual(expect.stringMatching(/^\S{8,128}$/));

      const accepted = await alice.post(
        path('a', vm.stopped.id, '/actions/start'),
        {},
        { 'x-request-id': 'start-trace-1' },
      );
      expect(accepted.status).toBe(202);
      expect(accepted.headers.get('x-request-id')).toBe('start-trace-1');
      const job = await eventually(async () => {
        const res = await alice.get(`/v1/projects/a/jobs/${accepted.body.job_id}`);
        return res.status === 200 ? res.body : undefined;
      }, 'start job visible');
      expect(job.trace_id).toBe('start-trace-1');
    });
  });
});
