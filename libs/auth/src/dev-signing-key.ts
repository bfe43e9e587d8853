import { generateKeyPairSync, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface SigningKey {
  kid: string;
  alg: 'RS256';
  privateKeyPem: string;
  publicKeyPem: string;
}

const FILE = 'dev-signing-key.json';

/**
 * Dev mode's token signing key, created once in the data folder (mode 0600) so tokens printed by
 * `npm run token` keep working across restarts. Production verifies gateway tokens via JWKS instead.
 */
export function loadOrCreateDevSigningKey(dataDir: string): SigningKey {
  const file = path.join(dataDir, FILE);
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as SigningKey;
  fs.mkdirSync(dataDir, { recursive: true });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key: SigningKey = {
    kid: randomUUID(),
    alg: 'RS256',
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
  // Write beside, then rename: two processes starting together never read half a key.
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(key), { mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
  } catch {
    // another process won the race; use its key
  } finally {
    fs.unlinkSync(tmp);
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as SigningKey;
}
