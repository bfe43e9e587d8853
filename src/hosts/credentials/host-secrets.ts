import { createHash, randomBytes } from 'node:crypto';
import { BOOTSTRAP_TOKEN_PREFIX, HOST_CREDENTIAL_PREFIX } from '@hcp/host-protocol';

/** 32 random bytes: guessing one is out of reach, so a digest lookup is all the check there is. */
const SECRET_BYTES = 32;

export const newBootstrapToken = (): string =>
  `${BOOTSTRAP_TOKEN_PREFIX}${randomBytes(SECRET_BYTES).toString('base64url')}`;
export const newHostCredential = (): string =>
  `${HOST_CREDENTIAL_PREFIX}${randomBytes(SECRET_BYTES).toString('base64url')}`;

/**
 * What HCP keeps of a token or credential: its SHA-256, hex. The secrets are random and long, so a plain
 * digest (no salt, no stretching) is enough, and it is what lets a request be authenticated by one
 * indexed lookup.
 */
export const secretDigest = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');
