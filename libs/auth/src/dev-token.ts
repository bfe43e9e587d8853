import * as jwt from 'jsonwebtoken';
import { OpsRole, TenantRole } from './principal';
import { SigningKey } from './dev-signing-key';

export interface DevTokenRequest {
  sub: string;
  projects: Record<string, TenantRole>;
  opsRoles: OpsRole[];
  issuer: string;
  audience: string;
  ttlSeconds: number;
}

/** Signs a token with the dev key; only dev mode verifies these. */
export function signDevToken(key: SigningKey, req: DevTokenRequest): string {
  return jwt.sign({ hcp_projects: req.projects, hcp_ops_roles: req.opsRoles }, key.privateKeyPem, {
    algorithm: key.alg,
    keyid: key.kid,
    subject: req.sub,
    issuer: req.issuer,
    audience: req.audience,
    expiresIn: req.ttlSeconds,
  });
}
