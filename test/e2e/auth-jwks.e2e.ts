import { createServer, Server } from 'node:http';
import { exportJWK, generateKeyPair, JWK, KeyLike, SignJWT } from 'jose';
import { ApiClient } from '../support/api-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

/** Production token verification: the gateway's keys from a JWKS URL, cached and refetched with care. */
describe('JWKS verification', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let jwksServer: Server;
  const published: JWK[] = [];
  let fetches = 0;
  const keys: Record<string, { privateKey: KeyLike; alg: 'RS256' | 'ES256' }> = {};

  async function addKey(kid: string, alg: 'RS256' | 'ES256', publish = true): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair(alg);
    keys[kid] = { privateKey, alg };
    if (publish) published.push({ ...(await exportJWK(publicKey)), kid, alg, use: 'sig' });
  }

  function sign(
    kid: string,
    claims: Record<string, unknown> = {},
    opts: { iss?: string; aud?: string } = {},
  ): Promise<string> {
    const { privateKey, alg } = keys[kid];
    return new SignJWT({ hcp_projects: { jw: 'viewer' }, ...claims })
      .setProtectedHeader({ alg, kid })
      .setSubject('gw-user')
      .setIssuer(opts.iss ?? 'https://gateway.test')
      .setAudience(opts.aud ?? 'hcp-api')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  }

  beforeAll(async () => {
    await addKey('rsa-1', 'RS256');
    await addKey('ec-1', 'ES256');
    jwksServer = createServer((_req, res) => {
      fetches += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
    const port = (jwksServer.address() as { port: number }).port;
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_AUTH_MODE: 'jwks',
        // Production mode: secrets need configured key-encryption keys (no generated keyring).
        HCP_SECRETS_KEKS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
        HCP_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        HCP_JWKS_REFRESH_COOLDOWN_MS: '2000',
        HCP_JWT_ISSUER: 'https://gateway.test',
        HCP_JWT_AUDIENCE: 'hcp-api',
        // jwks mode needs the base URL clients reach HCP at (console URLs never come from a Host header).
        HCP_PUBLIC_URL: 'https://hcp.gateway.test',
      },
    });
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
    await new Promise((resolve) => jwksServer?.close(resolve));
  });

  const call = (token: string) => new ApiClient(hcp.baseUrl, token).get('/v1/projects/jw/vms');

  it('accepts RS256 and ES256 tokens signed with the published keys', async () => {
    expect((await call(await sign('rsa-1'))).status).toBe(200);
    expect((await call(await sign('ec-1'))).status).toBe(200);
  });

  it('refuses a wrong issuer or audience, and a key that was never published', async () => {
    expect((await call(await sign('rsa-1', {}, { iss: 'https://evil.test' }))).status).toBe(401);
    expect((await call(await sign('rsa-1', {}, { aud: 'other-api' }))).status).toBe(401);
    await addKey('rogue', 'RS256', false);
    expect((await call(await sign('rogue'))).status).toBe(401);
  });

  it('fetches a rotated-in key when a token names it, but never more than once per cooldown', async () => {
    await new Promise((r) => setTimeout(r, 2100)); // let the cooldown of the previous test pass
    await addKey('rsa-2', 'RS256');
    const before = fetches;
    expect((await call(await sign('rsa-2'))).status).toBe(200);
    expect(fetches).toBe(before + 1);

    // A flood of tokens naming unknown kids: refused, and the JWKS endpoint is not hammered.
    for (let i = 0; i < 5; i++) await addKey(`unknown-${i}`, 'RS256', false);
    const flood = await Promise.all(Array.from({ length: 30 }, (_, i) => sign(`unknown-${i % 5}`).then(call)));
    expect(flood.every((r) => r.status === 401)).toBe(true);
    expect(fetches - before).toBeLessThanOrEqual(2);
  });
});
