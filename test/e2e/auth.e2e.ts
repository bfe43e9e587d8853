import { createHmac, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as jwt from 'jsonwebtoken';
import { ApiClient, ApiResponse, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

function expectUnauthorized(res: ApiResponse): void {
  const requestId = res.headers.get('x-request-id');
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: 401,
    body: { error: { code: 'UNAUTHORIZED' } },
  });
  expect(requestId).toEqual(expect.any(String));
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(res.body.error).toEqual({
    code: 'UNAUTHORIZED',
    message: expect.any(String),
    trace_id: requestId,
    ...(res.body.error.details ? { details: expect.any(Object) } : {}),
  });
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

const b64url = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('authentication', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let admin: ApiClient;
  let anonymous: ApiClient;
  let choice: { image_id: string; flavor_id: string };
  let devKey: { kid: string; privateKeyPem: string; publicKeyPem: string };

  const nowSeconds = () => Math.floor(Date.now() / 1000);

  /** Claims of a token HCP accepts (admin of `p`); each test breaks exactly one thing. */
  const goodClaims = (): Record<string, unknown> => ({
    sub: 'mallory',
    hcp_projects: { p: 'admin' },
    hcp_ops_roles: [],
    iss: 'hcp-dev',
    aud: 'hcp',
    iat: nowSeconds(),
    exp: nowSeconds() + 600,
  });

  const sign = (claims: Record<string, unknown>, key = devKey.privateKeyPem, header: Record<string, unknown> = {}) =>
    jwt.sign(claims, key, {
      algorithm: 'RS256',
      keyid: devKey.kid,
      header: { alg: 'RS256', kid: devKey.kid, ...header } as never,
    });

  /** A token with an arbitrary header and signature, for algorithms jsonwebtoken refuses to produce. */
  const handMade = (
    header: Record<string, unknown>,
    claims: Record<string, unknown>,
    signature: (input: string) => string,
  ) => {
    const input = `${b64url(header)}.${b64url(claims)}`;
    return `${input}.${signature(input)}`;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' } });
    devKey = JSON.parse(readFileSync(path.join(hcp.dataDir, 'dev-signing-key.json'), 'utf8'));
    admin = new ApiClient(hcp.baseUrl, hcp.token('alice', { p: 'admin' }));
    anonymous = admin.as(undefined);
    choice = await seededChoice(admin);
  }, 90_000);

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  /** Every protected kind of request a bad token might try, each answered 401 with the envelope. */
  async function expectRefusedEverywhere(client: ApiClient): Promise<void> {
    expectUnauthorized(await client.get('/v1/projects/p/vms'));
    expectUnauthorized(await client.get('/v1/zones'));
    expectUnauthorized(await client.post('/v1/projects/p/vms', { name: 'intruder', zone: 'local', ...choice }));
  }

  it('accepts the hand-signed baseline token (so the refusals below are about the one thing broken)', async () => {
    const res = await admin.as(sign(goodClaims())).get('/v1/projects/p/vms');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], next_cursor: null });
  });

  it('refuses a request without an Authorization header', async () => {
    await expectRefusedEverywhere(anonymous);
  });

  it('refuses a malformed bearer token', async () => {
    await expectRefusedEverywhere(admin.as('garbage'));
    await expectRefusedEverywhere(admin.as('a.b.c'));
    expectUnauthorized(await anonymous.get('/v1/projects/p/vms', { authorization: 'Bearer ' }));
  });

  it('refuses a scheme other than Bearer, even with a valid token', async () => {
    const token = sign(goodClaims());
    expectUnauthorized(
      await anonymous.get('/v1/projects/p/vms', {
        authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}`,
      }),
    );
    expectUnauthorized(await anonymous.get('/v1/projects/p/vms', { authorization: `Token ${token}` }));
    expectUnauthorized(await anonymous.get('/v1/projects/p/vms', { authorization: token }));
  });

  it('refuses a token signed by another RSA key under the same kid', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = sign(goodClaims(), privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    await expectRefusedEverywhere(admin.as(forged));
  });

  it('refuses an unsigned token (alg none)', async () => {
    const none = handMade({ alg: 'none', typ: 'JWT', kid: devKey.kid }, goodClaims(), () => '');
    await expectRefusedEverywhere(admin.as(none));
    const noneWithoutKid = handMade({ alg: 'none', typ: 'JWT' }, goodClaims(), () => '');
    expectUnauthorized(await admin.as(noneWithoutKid).get('/v1/projects/p/vms'));
  });

  it('refuses an HS256 token whose secret is the public key (algorithm confusion)', async () => {
    const hmac = (secret: string) => (input: string) => createHmac('sha256', secret).update(input).digest('base64url');
    const confused = handMade({ alg: 'HS256', typ: 'JWT', kid: devKey.kid }, goodClaims(), hmac(devKey.publicKeyPem));
    await expectRefusedEverywhere(admin.as(confused));
    // Also with the PEM in the form HCP exports it for verification (trailing newline stripped or not).
    const trimmed = handMade(
      { alg: 'HS256', typ: 'JWT', kid: devKey.kid },
      goodClaims(),
      hmac(devKey.publicKeyPem.trim()),
    );
    expectUnauthorized(await admin.as(trimmed).get('/v1/projects/p/vms'));
  });

  it('refuses an expired token', async () => {
    await expectRefusedEverywhere(
      admin.as(sign({ ...goodClaims(), iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 })),
    );
    // Beyond the clock skew tolerance (30 s by default), but only just.
    expectUnauthorized(
      await admin
        .as(sign({ ...goodClaims(), iat: nowSeconds() - 600, exp: nowSeconds() - 90 }))
        .get('/v1/projects/p/vms'),
    );
  });

  it('refuses a token that is not valid yet', async () => {
    await expectRefusedEverywhere(admin.as(sign({ ...goodClaims(), nbf: nowSeconds() + 600 })));
  });

  it('refuses a token for another audience or from another issuer', async () => {
    await expectRefusedEverywhere(admin.as(sign({ ...goodClaims(), aud: 'someone-else' })));
    await expectRefusedEverywhere(admin.as(sign({ ...goodClaims(), iss: 'https://evil.example' })));
    expectUnauthorized(await admin.as(sign({ ...goodClaims(), aud: undefined })).get('/v1/projects/p/vms'));
    expectUnauthorized(await admin.as(sign({ ...goodClaims(), iss: undefined })).get('/v1/projects/p/vms'));
  });

  it('refuses a token whose hcp_projects binds an unknown role', async () => {
    await expectRefusedEverywhere(admin.as(sign({ ...goodClaims(), hcp_projects: { p: 'superuser' } })));
    expectUnauthorized(
      await admin.as(sign({ ...goodClaims(), hcp_projects: { p: 'admin', q: 'root' } })).get('/v1/projects/p/vms'),
    );
    expectUnauthorized(await admin.as(sign({ ...goodClaims(), hcp_projects: ['p'] })).get('/v1/projects/p/vms'));
    expectUnauthorized(await admin.as(sign({ ...goodClaims(), hcp_ops_roles: ['god'] })).get('/v1/projects/p/vms'));
  });

  it('refuses a token without a subject', async () => {
    await expectRefusedEverywhere(admin.as(sign({ ...goodClaims(), sub: undefined })));
    expectUnauthorized(await admin.as(sign({ ...goodClaims(), sub: '' })).get('/v1/projects/p/vms'));
  });

  it('echoes the request id on a 401', async () => {
    const res = await anonymous.get('/v1/projects/p/vms', { 'x-request-id': 'unauth-1' });
    expectUnauthorized(res);
    expect(res.body.error.trace_id).toBe('unauth-1');
  });

  it('ran no handler for any refused request: no VM was created', async () => {
    // A valid create after all the refused ones; once the read model shows it, it would show any earlier one.
    const created = await admin.post('/v1/projects/p/vms', { name: 'legit-1', zone: 'local', ...choice });
    expect(created.status).toBe(202);
    await jobFinished(admin, 'p', created.body.job_id);
    const items = await eventually(async () => {
      const res = await admin.get('/v1/projects/p/vms?limit=200');
      return res.body.items.some((v: { id: string }) => v.id === created.body.resource_id) ? res.body.items : undefined;
    }, 'legit VM listed');
    expect(items.map((v: { name: string }) => v.name)).toEqual(['legit-1']);
    const jobs = await admin.get('/v1/projects/p/jobs?limit=200');
    expect(jobs.body.items.map((j: { resource_id: string }) => j.resource_id)).toEqual([created.body.resource_id]);
  });

  it('serves the health endpoints without a token', async () => {
    const live = await anonymous.get('/health/live');
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ status: 'ok' });
    const ready = await anonymous.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok' });
    // A bad token does not turn a public path into a 401 either.
    expect((await admin.as('garbage').get('/health/live')).status).toBe(200);
  });
});
