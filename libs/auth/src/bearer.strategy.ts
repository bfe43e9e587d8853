import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import { Principal } from './principal';
import { TokenVerifier } from './token-verifier';

/** Passport's bearer strategy, verifying with HCP's TokenVerifier; the principal becomes `req.user`. */
@Injectable()
export class BearerTokenStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly verifier: TokenVerifier) {
    super();
  }

  validate(token: string): Promise<Principal> {
    return this.verifier.verify(token);
  }
}
