import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { IncomingHttpHeaders } from 'node:http';
import { Strategy } from 'passport-http-bearer';
import { Principal } from './principal';
import { TokenVerifier } from './token-verifier';

/**
 * The token of an `Authorization: Bearer <token>` header, or null. The only place HCP takes a bearer
 * token from: a token in the URL (`?access_token=`) ends up in access logs, proxies and browser history,
 * and one in a body field is as easy to leak, so neither authenticates.
 */
export function bearerTokenOf(headers: IncomingHttpHeaders): string | null {
  const match = /^Bearer ([^\s]+)$/i.exec(headers.authorization ?? '');
  return match ? match[1] : null;
}

/** Passport's bearer strategy, verifying with HCP's TokenVerifier; the principal becomes `req.user`. */
@Injectable()
export class BearerTokenStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly verifier: TokenVerifier) {
    super({ passReqToCallback: true });
  }

  /**
   * passport-http-bearer also reads `access_token` from the query and the body; a token that did not
   * come from the Authorization header is refused before it is even verified.
   */
  async validate(req: { headers: IncomingHttpHeaders }, token: string): Promise<Principal | null> {
    if (bearerTokenOf(req.headers) !== token) return null;
    return this.verifier.verify(token);
  }
}
