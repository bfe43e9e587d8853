import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import * as jwt from 'jsonwebtoken';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { Principal, principalFromClaims } from './principal';
import { VerificationKeys } from './verification-keys';

export interface JwtVerificationOptions {
  keys: VerificationKeys;
  issuer: string;
  audience: string;
  clockSkewSeconds: number;
}

export const JWT_VERIFICATION_OPTIONS = Symbol('JWT_VERIFICATION_OPTIONS');

/**
 * Bearer-token verification through passport. The key is chosen by the token's `kid` and the algorithm
 * is pinned to that key's, so `alg: none` or an HS256 token signed with a public key never verifies.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(options: JwtVerificationOptions) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      issuer: options.issuer,
      audience: options.audience,
      jsonWebTokenOptions: { clockTolerance: options.clockSkewSeconds },
      algorithms: ['RS256', 'ES256'],
      secretOrKeyProvider: (_req: unknown, rawToken: string, done: (err: unknown, key?: string | Buffer) => void) => {
        const decoded = jwt.decode(rawToken, { complete: true });
        const found = decoded ? options.keys.find(decoded.header.kid) : undefined;
        if (!found || decoded?.header.alg !== found.alg) return done(null, undefined);
        done(null, found.key.export({ type: 'spki', format: 'pem' }) as string);
      },
    });
  }

  /** Passport calls this with verified claims; returning false makes the request 401. */
  validate(claims: Record<string, unknown>): Principal | false {
    return principalFromClaims(claims) ?? false;
  }
}
