import { generateKeyPairSync, KeyObject } from 'node:crypto';
import { exportJWK, SignJWT } from 'jose';
import { HcpError } from '@hcp/domain';
import { TokenVerifier, TokenVerifierOptions } from './token-verifier';
import { VerifiedTokenCache } from './verified-token-cache';

const ISSUER = 'https://idp.test';
const AUDIENCE = 'hcp';
const T0 = Date.parse('2030-01-01T00:00:00Z');

describe('TokenVerifier: remembered verifications', () => {
  let privateKey: KeyObject;
  let clock: number;
  let options: TokenVerifierOptions;

  beforeAll(async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    options = {
      keys: { kind: 'jwks', jwks: { keys: [jwk] } },
      issuer: ISSUER,
      audience: AUDIENCE,
      clockSkewSeconds: 5,
      now: () => clock,
    };
  });

  beforeEach(() => {
    clock = T0;
  });

  const seconds = (ms: number) => Math.floor(ms / 1000);
  const sign = (
    claims: { exp: number; nbf?: number; projects?: Record<string, string> },
    key: KeyObject = privateKey,
  ) => {
    const jwt = new SignJWT({ hcp_projects: claims.projects ?? { p1: 'viewer' } })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setSubject('alice')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(seconds(clock))
      .setExpirationTime(claims.exp);
    if (claims.nbf !== undefined) jwt.setNotBefore(claims.nbf);
    return jwt.sign(key);
  };
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => 'accepted',
      (err: unknown) => (err instanceof HcpError ? err.code : String(err)),
    );

  it('answers a token it verified a moment ago from memory', async () => {
    const verifier = new TokenVerifier(options);
    const token = await sign({ exp: seconds(T0) + 3600 });
    const first = await verifier.verify(token);
    expect(first).toEqual({ sub: 'alice', projects: { p1: 'viewer' }, opsRoles: [] });
    // The same principal object: the signature was not checked a second time.
    expect(await verifier.verify(token)).toBe(first);
  });

  it('verifies every request afresh when the cache is off', async () => {
    const verifier = new TokenVerifier({ ...options, cache: { maxEntries: 0 } });
    const token = await sign({ exp: seconds(T0) + 3600 });
    expect(await verifier.verify(token)).not.toBe(await verifier.verify(token));
  });

  it('refuses a remembered token once it has expired', async () => {
    const verifier = new TokenVerifier(options);
    const token = await sign({ exp: seconds(T0) + 30 });
    await verifier.verify(token);
    clock = T0 + 30_000 + 5_000 + 1_000; // past exp and the clock skew, well within the cache's max age
    expect(await refusal(verifier.verify(token))).toBe('UNAUTHORIZED');
  });

  it('verifies a remembered token again after the max age', async () => {
    const verifier = new TokenVerifier({ ...options, cache: { maxAgeMs: 10_000 } });
    const token = await sign({ exp: seconds(T0) + 3600 });
    const first = await verifier.verify(token);
    clock = T0 + 10_000;
    const again = await verifier.verify(token);
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });

  it('never remembers a refused token: one not valid yet is accepted once its nbf has come', async () => {
    const verifier = new TokenVerifier(options);
    const token = await sign({ exp: seconds(T0) + 3600, nbf: seconds(T0) + 60 });
    expect(await refusal(verifier.verify(token))).toBe('UNAUTHORIZED');
    expect(await refusal(verifier.verify(token))).toBe('UNAUTHORIZED');
    clock = T0 + 60_000;
    expect(await refusal(verifier.verify(token))).toBe('accepted');
  });

  it('never accepts a token that only looks like a remembered one', async () => {
    const verifier = new TokenVerifier(options);
    const token = await sign({ exp: seconds(T0) + 3600 });
    await verifier.verify(token);
    const forger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const forged = await sign({ exp: seconds(T0) + 3600, projects: { p1: 'owner' } }, forger);
    expect(await refusal(verifier.verify(forged))).toBe('UNAUTHORIZED');
    const [header, payload] = token.split('.');
    expect(await refusal(verifier.verify(`${header}.${payload}.${'A'.repeat(342)}`))).toBe('UNAUTHORIZED');
  });

  it('hands out a principal no request can change for the next one', async () => {
    const verifier = new TokenVerifier(options);
    const token = await sign({ exp: seconds(T0) + 3600 });
    const principal = await verifier.verify(token);
    expect(() => {
      (principal.projects as Record<string, string>).p2 = 'owner';
    }).toThrow(TypeError);
    expect((await verifier.verify(token)).projects).toEqual({ p1: 'viewer' });
  });
});

describe('VerifiedTokenCache', () => {
  const principal = (sub: string) => ({ sub, projects: {}, opsRoles: [] });
  const farExp = 4_000_000_000;

  it('forgets the least recently used token beyond its bound', () => {
    const cache = new VerifiedTokenCache({ maxEntries: 2, maxAgeMs: 60_000, now: () => 0 });
    cache.set('a', principal('a'), farExp);
    cache.set('b', principal('b'), farExp);
    expect(cache.get('a')?.sub).toBe('a'); // a is now the most recent
    cache.set('c', principal('c'), farExp);
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.sub).toBe('a');
    expect(cache.get('c')?.sub).toBe('c');
  });

  it('does not store a token that is already expired', () => {
    const cache = new VerifiedTokenCache({ maxEntries: 10, maxAgeMs: 60_000, now: () => 100_000 });
    cache.set('late', principal('late'), 100);
    expect(cache.get('late')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
