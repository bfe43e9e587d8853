import { createPublicKey, KeyObject } from 'node:crypto';
import * as fs from 'node:fs';

export type VerificationAlgorithm = 'RS256' | 'ES256';

export interface VerificationKey {
  kid: string;
  alg: VerificationAlgorithm;
  key: KeyObject;
}

/** Keys tokens are checked against, by `kid`. */
export class VerificationKeys {
  constructor(private readonly keys: VerificationKey[]) {}

  find(kid: string | undefined): VerificationKey | undefined {
    return kid === undefined ? undefined : this.keys.find((k) => k.kid === kid);
  }

  static fromPem(kid: string, alg: VerificationAlgorithm, pem: string): VerificationKeys {
    return new VerificationKeys([{ kid, alg, key: createPublicKey(pem) }]);
  }

  /** Reads a JWKS file; keys without a `kid` or of another algorithm family are skipped. */
  static fromJwksFile(file: string): VerificationKeys {
    const jwks = JSON.parse(fs.readFileSync(file, 'utf8')) as { keys?: Array<Record<string, unknown>> };
    const keys: VerificationKey[] = [];
    for (const jwk of jwks.keys ?? []) {
      if (typeof jwk.kid !== 'string') continue;
      const alg: VerificationAlgorithm | null = jwk.kty === 'RSA' ? 'RS256' : jwk.kty === 'EC' && jwk.crv === 'P-256' ? 'ES256' : null;
      if (!alg) continue;
      keys.push({ kid: jwk.kid, alg, key: createPublicKey({ key: jwk as never, format: 'jwk' }) });
    }
    return new VerificationKeys(keys);
  }
}
