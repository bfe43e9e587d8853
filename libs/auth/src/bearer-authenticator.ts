import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
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

/** What a request offers to authenticate with: its headers, and the query and body a token may be smuggled in. */
export interface Credentials {
  headers: IncomingHttpHeaders;
  query?: unknown;
  body?: unknown;
}

/**
 * Who a request's bearer token says the caller is: the principal, or null when the request carries no
 * usable token. A request that also names an `access_token` in its query or body is refused whatever its
 * header says (what passport-http-bearer, used before, did). Rejects when the token fails verification.
 */
@Injectable()
export class BearerAuthenticator {
  constructor(private readonly verifier: TokenVerifier) {}

  async authenticate(credentials: Credentials): Promise<Principal | null> {
    const token = bearerTokenOf(credentials.headers);
    if (token === null || smuggled(credentials.query) || smuggled(credentials.body)) return null;
    return this.verifier.verify(token);
  }
}

const smuggled = (where: unknown): boolean =>
  typeof where === 'object' && where !== null && Boolean((where as { access_token?: unknown }).access_token);
