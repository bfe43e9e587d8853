import * as fs from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  JSONWebKeySet,
  JWTPayload,
  jwtVerify,
  JWTVerifyGetKey,
} from 'jose';
import { HcpError } from '@hcp/domain';
import { Principal, principalFromClaims } from './principal';
import { VerifiedTokenCache, VerifiedTokenCacheOptions } from './verified-token-cache';

/** Where verification keys come from. */
export type KeySource =
  | { kind: 'jwks_url'; url: string; refreshCooldownMs: number; cacheMaxAgeMs: number; timeoutMs: number }
  | { kind: 'jwks_file'; path: string; refreshCooldownMs: number }
  | { kind: 'jwks'; jwks: JSONWebKeySet };

export interface TokenVerifierOptions {
  keys: KeySource;
  issuer: string;
  audience: string;
  clockSkewSeconds: number;
  /** HS256 shared secret, accepted only when dev mode is explicitly on. */
  devHs256Secret?: string;
  /** Remembered verifications (defaults below); `maxEntries: 0` verifies every request afresh. */
  cache?: Partial<Omit<VerifiedTokenCacheOptions, 'now'>>;
  /** The time the checks and the cache go by (tests); the system clock otherwise. */
  now?: () => number;
}

/**
 * A minute: a token signed by a key withdrawn from the JWKS stays accepted at most that long (jose
 * trusts a fetched JWKS for ten). 5,000 tokens of ~1 KB bound the memory at a few MB.
 */
export const VERIFIED_TOKEN_CACHE_DEFAULTS = { maxEntries: 5_000, maxAgeMs: 60_000 } as const;

/** Asymmetric algorithms only: a token cannot pick `none`, or HS256 keyed with a public key. */
const ASYMMETRIC = ['RS256', 'ES256'];

/**
 * Verifies bearer tokens: signature against the gateway's JWKS (by `kid`), `iss`, `aud`, `exp`, `nbf`
 * with a small clock skew, and HCP's claims. Every failure is the same UNAUTHORIZED: a caller learns
 * nothing about which check failed.
 */
export class TokenVerifier {
  private readonly getKey: JWTVerifyGetKey;
  private readonly hs256: Uint8Array | null;
  private readonly verified: VerifiedTokenCache;

  constructor(private readonly options: TokenVerifierOptions) {
    this.getKey = keyResolver(options.keys);
    this.hs256 = options.devHs256Secret ? new TextEncoder().encode(options.devHs256Secret) : null;
    this.verified = new VerifiedTokenCache({
      ...VERIFIED_TOKEN_CACHE_DEFAULTS,
      ...options.cache,
      ...(options.now ? { now: options.now } : {}),
    });
  }

  async verify(token: string): Promise<Principal> {
    const known = this.verified.get(token);
    if (known) return known;
    const { principal, exp } = await this.verifyAfresh(token);
    // Only here, after every check passed: a refused token is never remembered, so it is refused again
    // by the full verification (and a token becoming valid at its `nbf` is then accepted).
    this.verified.set(token, principal, exp);
    return principal;
  }

  private async verifyAfresh(token: string): Promise<{ principal: Principal; exp: number }> {
    let payload: JWTPayload;
    try {
      const common = {
        issuer: this.options.issuer,
        audience: this.options.audience,
        clockTolerance: this.options.clockSkewSeconds,
        requiredClaims: ['exp', 'sub'],
        ...(this.options.now ? { currentDate: new Date(this.options.now()) } : {}),
      };
      if (this.hs256 && headerAlg(token) === 'HS256') {
        ({ payload } = await jwtVerify(token, this.hs256, { ...common, algorithms: ['HS256'] }));
      } else {
        ({ payload } = await jwtVerify(token, this.getKey, { ...common, algorithms: ASYMMETRIC }));
      }
    } catch (err) {
      if (err instanceof errors.JOSEError || err instanceof TypeError || err instanceof SyntaxError)
        throw unauthorized();
      // The key source itself failed (JWKS URL down): still the caller's 401, but worth a log line upstream.
      throw unauthorized(err);
    }
    const principal = principalFromClaims(payload as Record<string, unknown>);
    if (!principal) throw unauthorized();
    // `exp` is a required claim and jose checked it is a number.
    return { principal, exp: payload.exp as number };
  }
}

function unauthorized(cause?: unknown): HcpError {
  const error = new HcpError('UNAUTHORIZED', 'a valid bearer token is required');
  if (cause) (error as Error & { cause?: unknown }).cause = cause;
  return error;
}

function headerAlg(token: string): string | undefined {
  try {
    return JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')).alg;
  } catch {
    return undefined;
  }
}

function keyResolver(source: KeySource): JWTVerifyGetKey {
  switch (source.kind) {
    case 'jwks':
      return createLocalJWKSet(source.jwks);
    case 'jwks_url':
      // jose caches the set, refetches it when a token names an unknown kid, and never more often than
      // the cooldown: a flood of tokens with random kids cannot hammer the identity provider.
      return createRemoteJWKSet(new URL(source.url), {
        cooldownDuration: source.refreshCooldownMs,
        cacheMaxAge: source.cacheMaxAgeMs,
        timeoutDuration: source.timeoutMs,
      });
    case 'jwks_file':
      return reloadingFileJwks(source.path, source.refreshCooldownMs);
  }
}

/** A JWKS file read at start and re-read when a token names an unknown kid, at most once per cooldown. */
function reloadingFileJwks(path: string, cooldownMs: number): JWTVerifyGetKey {
  const read = () => createLocalJWKSet(JSON.parse(fs.readFileSync(path, 'utf8')) as JSONWebKeySet);
  let current = read();
  let lastRead = Date.now();
  return async (header, token) => {
    try {
      return await current(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || Date.now() - lastRead < cooldownMs) throw err;
      lastRead = Date.now();
      current = read();
      return current(header, token);
    }
  };
}
